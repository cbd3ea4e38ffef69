//! What a clone's candidates say: three sentences of different lengths
//! heard for every candidate (a voice reads a different style row for each
//! input length), and three others heard only when the result is judged.
//! One set per language Kokoro speaks; any other language is searched in
//! English (a style table sets the voice, not the language).

/// The search's and the judge's sentences for a language (ISO 639-1 or
/// BCP-47), and the language they are in.
pub fn sentences(language: &str) -> (&'static str, [&'static str; 3], [&'static str; 3]) {
    let code = language.get(..2).unwrap_or(language).to_ascii_lowercase();
    match code.as_str() {
        "es" => (
            "es",
            [
                "El perro corre por el parque.",
                "Nunca pensé que un paseo bajo la lluvia me despertara tanto.",
                "Por favor, llama a Estela y pídele que traiga estas cosas de la tienda.",
            ],
            [
                "Cuando la luz del sol toca las gotas de lluvia, se forma un arco iris.",
                "Nos vemos mañana por la mañana en la vieja estación.",
                "Mi hermana vive en una casa pequeña cerca del mar.",
            ],
        ),
        "fr" => (
            "fr",
            [
                "Le chien court dans le parc.",
                "Je n'ai jamais pensé qu'une promenade sous la pluie me réveillerait autant.",
                "Appelle Stella et demande-lui d'apporter ces choses du magasin, s'il te plaît.",
            ],
            [
                "Quand la lumière du soleil touche les gouttes de pluie, un arc-en-ciel apparaît.",
                "Nous nous reverrons demain matin à la vieille gare.",
                "Ma sœur habite une petite maison près de la mer.",
            ],
        ),
        "it" => (
            "it",
            [
                "Il cane corre nel parco.",
                "Non avrei mai pensato che una passeggiata sotto la pioggia mi svegliasse così.",
                "Per favore, chiama Stella e chiedile di portare queste cose dal negozio.",
            ],
            [
                "Quando la luce del sole colpisce le gocce di pioggia, nasce un arcobaleno.",
                "Ci vediamo domani mattina alla vecchia stazione.",
                "Mia sorella abita in una piccola casa vicino al mare.",
            ],
        ),
        "pt" => (
            "pt",
            [
                "O cachorro corre no parque.",
                "Nunca pensei que um passeio na chuva me deixasse tão desperto.",
                "Por favor, ligue para a Estela e peça que ela traga estas coisas da loja.",
            ],
            [
                "Quando a luz do sol toca as gotas de chuva, forma-se um arco-íris.",
                "Nos vemos amanhã de manhã na velha estação.",
                "Minha irmã mora numa casa pequena perto do mar.",
            ],
        ),
        "hi" => (
            "hi",
            [
                "कुत्ता पार्क में दौड़ रहा है।",
                "मैंने कभी नहीं सोचा था कि बारिश में टहलना इतना अच्छा लगेगा।",
                "कृपया स्टेला को फ़ोन करो और उससे दुकान से ये चीज़ें लाने को कहो।",
            ],
            [
                "जब सूरज की रोशनी बारिश की बूंदों पर पड़ती है, तो इंद्रधनुष बनता है।",
                "हम कल सुबह पुराने स्टेशन पर फिर मिलेंगे।",
                "मेरी बहन समुद्र के पास एक छोटे से घर में रहती है।",
            ],
        ),
        _ => (
            "en",
            [
                "The quick brown fox jumps over the lazy dog.",
                "I never thought a walk in the rain could feel like this.",
                "Please call Stella and ask her to come along.",
            ],
            [
                "When the sunlight strikes raindrops in the air, they act as a prism and form a rainbow.",
                "We will meet again tomorrow morning at the old station.",
                "My sister lives in a small house close to the sea.",
            ],
        ),
    }
}
