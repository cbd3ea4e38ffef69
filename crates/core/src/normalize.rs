//! Text normalisation before phonemes: numbers, currency, dates, times,
//! percentages, ordinals, abbreviations and symbols become words, so that
//! "$3.50 on 12/05" is read "three dollars and fifty cents on December
//! fifth". English and Spanish have rules here; espeak-ng's own number
//! reading covers the other languages.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Normalises `text` for a voice speaking `language` (BCP-47).
pub fn normalize(text: &str, language: &str) -> String {
    let lang = language.get(..2).unwrap_or("").to_ascii_lowercase();
    match lang.as_str() {
        "en" => apply(text, &EN),
        "es" => apply(text, &ES),
        _ => text.to_owned(),
    }
}

/// A pattern and what its matches become.
type Rule = (Regex, fn(&Captures) -> String);

struct Rules {
    words: fn(u64) -> String,
    rules: Vec<Rule>,
}

fn apply(text: &str, rules: &Rules) -> String {
    let mut s = text.to_owned();
    for (re, f) in &rules.rules {
        s = re.replace_all(&s, |c: &Captures| f(c)).into_owned();
    }
    // Any digits left (odd formats) are read one number at a time.
    static DIGITS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+").unwrap());
    DIGITS
        .replace_all(&s, |c: &Captures| {
            c[0].parse::<u64>()
                .map(rules.words)
                .unwrap_or_else(|_| c[0].to_owned())
        })
        .into_owned()
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid normalisation pattern")
}

fn num(s: &str) -> u64 {
    s.replace([',', '.'], "").parse().unwrap_or(0)
}

// ---------------------------------------------------------------- English

const EN_ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const EN_TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const EN_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Cardinal number in English words.
pub fn en_words(n: u64) -> String {
    fn below_thousand(n: u64) -> String {
        let (h, r) = (n / 100, n % 100);
        let mut parts = Vec::new();
        if h > 0 {
            parts.push(format!("{} hundred", EN_ONES[h as usize]));
        }
        if r > 0 || h == 0 {
            parts.push(if r < 20 {
                EN_ONES[r as usize].to_owned()
            } else if r % 10 == 0 {
                EN_TENS[(r / 10) as usize].to_owned()
            } else {
                format!(
                    "{}-{}",
                    EN_TENS[(r / 10) as usize],
                    EN_ONES[(r % 10) as usize]
                )
            });
        }
        parts.join(" ")
    }
    if n < 1000 {
        return below_thousand(n);
    }
    let scales = [
        (1_000_000_000_000, "trillion"),
        (1_000_000_000, "billion"),
        (1_000_000, "million"),
        (1000, "thousand"),
    ];
    let mut parts = Vec::new();
    let mut rest = n;
    for (size, name) in scales {
        if rest >= size {
            parts.push(format!("{} {name}", en_words(rest / size)));
            rest %= size;
        }
    }
    if rest > 0 {
        parts.push(below_thousand(rest));
    }
    parts.join(" ")
}

/// Ordinal number in English words ("twenty-first").
pub fn en_ordinal(n: u64) -> String {
    let words = en_words(n);
    let (head, last) = match words.rfind([' ', '-']) {
        Some(i) => (&words[..=i], &words[i + 1..]),
        None => ("", words.as_str()),
    };
    let last = match last {
        "one" => "first".to_owned(),
        "two" => "second".to_owned(),
        "three" => "third".to_owned(),
        "five" => "fifth".to_owned(),
        "eight" => "eighth".to_owned(),
        "nine" => "ninth".to_owned(),
        "twelve" => "twelfth".to_owned(),
        w if w.ends_with('y') => format!("{}ieth", &w[..w.len() - 1]),
        w => format!("{w}th"),
    };
    format!("{head}{last}")
}

fn en_year(y: u64) -> String {
    match y {
        2000..=2009 => en_words(y),
        _ if y.is_multiple_of(100) => format!("{} hundred", en_words(y / 100)),
        _ if y % 100 < 10 => format!("{} oh {}", en_words(y / 100), en_words(y % 100)),
        _ => format!("{} {}", en_words(y / 100), en_words(y % 100)),
    }
}

fn en_money(c: &Captures) -> String {
    let (unit, units, sub, subs) = match &c[1] {
        "$" => ("dollar", "dollars", "cent", "cents"),
        "€" => ("euro", "euros", "cent", "cents"),
        _ => ("pound", "pounds", "penny", "pence"),
    };
    let whole = num(&c[2]);
    let cents = c.get(3).map(|m| cents_of(m.as_str())).unwrap_or(0);
    let mut s = format!(
        "{} {}",
        en_words(whole),
        if whole == 1 { unit } else { units }
    );
    if cents > 0 {
        s = format!(
            "{s} and {} {}",
            en_words(cents),
            if cents == 1 { sub } else { subs }
        );
    }
    s
}

fn cents_of(s: &str) -> u64 {
    let v: u64 = s.parse().unwrap_or(0);
    if s.len() == 1 {
        v * 10
    } else {
        v
    }
}

fn en_date(c: &Captures) -> String {
    let (m, d) = (num(&c[1]), num(&c[2]));
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return format!("{} slash {}", en_words(m), en_words(d));
    }
    let mut s = format!("{} {}", EN_MONTHS[(m - 1) as usize], en_ordinal(d));
    if let Some(y) = c.get(3) {
        let mut y = num(y.as_str());
        if y < 100 {
            y += 2000;
        }
        s = format!("{s}, {}", en_year(y));
    }
    s
}

fn en_time(c: &Captures) -> String {
    let (h, m) = (num(&c[1]), num(&c[2]));
    if h > 24 || m > 59 {
        return format!("{} {}", en_words(h), en_words(m));
    }
    match m {
        0 => format!("{} o'clock", en_words(h)),
        1..=9 => format!("{} oh {}", en_words(h), en_words(m)),
        _ => format!("{} {}", en_words(h), en_words(m)),
    }
}

fn en_decimal(c: &Captures) -> String {
    let digits: Vec<String> = c[2]
        .chars()
        .map(|d| EN_ONES[d.to_digit(10).unwrap_or(0) as usize].to_owned())
        .collect();
    format!("{} point {}", en_words(num(&c[1])), digits.join(" "))
}

static EN: LazyLock<Rules> = LazyLock::new(|| Rules {
    words: en_words,
    rules: vec![
        (
            re(r"([$€£])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?\b"),
            en_money,
        ),
        (re(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?\b"), en_date),
        (re(r"\b(\d{1,2}):(\d{2})\b"), en_time),
        (re(r"(\d+(?:\.\d+)?)\s?%"), |c| {
            format!("{} percent", c[1].to_owned())
        }),
        (re(r"\b(\d+)(?:st|nd|rd|th)\b"), |c| en_ordinal(num(&c[1]))),
        (re(r"\b(\d+)\.(\d+)\b"), en_decimal),
        (re(r"\b\d{1,3}(?:,\d{3})+\b"), |c| en_words(num(&c[0]))),
        (re(r"\b(1[1-9]\d\d|20\d\d)s\b"), |c| {
            format!("{}s", en_year(num(&c[1])).trim_end_matches('y')).replace("ys", "ies")
        }),
        (re(r"\b(1[1-9]\d\d|20\d\d)\b"), |c| en_year(num(&c[1]))),
        (re(r"\bDr\.(\s)"), |c| format!("Doctor{}", &c[1])),
        (re(r"\bMr\.(\s)"), |c| format!("Mister{}", &c[1])),
        (re(r"\bMrs\.(\s)"), |c| format!("Missus{}", &c[1])),
        (re(r"\bMs\.(\s)"), |c| format!("Miz{}", &c[1])),
        (re(r"\bSt\.(\s)"), |c| format!("Saint{}", &c[1])),
        (re(r"\bJr\.(\s|$)"), |c| format!("Junior{}", &c[1])),
        (re(r"\bvs\.?(\s)"), |c| format!("versus{}", &c[1])),
        (re(r"\betc\."), |_| "et cetera.".to_owned()),
        (re(r"\be\.g\.,?"), |_| "for example,".to_owned()),
        (re(r"\bi\.e\.,?"), |_| "that is,".to_owned()),
        (re(r"\bNo\.\s?(\d)"), |c| format!("number {}", &c[1])),
        (re(r"\s&\s"), |_| " and ".to_owned()),
        (re(r"(\d)\s?\+\s?(\d)"), |c| {
            format!("{} plus {}", &c[1], &c[2])
        }),
        (re(r"@"), |_| " at ".to_owned()),
    ],
});

// ---------------------------------------------------------------- Spanish

const ES_ONES: [&str; 30] = [
    "cero",
    "uno",
    "dos",
    "tres",
    "cuatro",
    "cinco",
    "seis",
    "siete",
    "ocho",
    "nueve",
    "diez",
    "once",
    "doce",
    "trece",
    "catorce",
    "quince",
    "dieciséis",
    "diecisiete",
    "dieciocho",
    "diecinueve",
    "veinte",
    "veintiuno",
    "veintidós",
    "veintitrés",
    "veinticuatro",
    "veinticinco",
    "veintiséis",
    "veintisiete",
    "veintiocho",
    "veintinueve",
];
const ES_TENS: [&str; 10] = [
    "",
    "",
    "",
    "treinta",
    "cuarenta",
    "cincuenta",
    "sesenta",
    "setenta",
    "ochenta",
    "noventa",
];
const ES_HUNDREDS: [&str; 10] = [
    "",
    "ciento",
    "doscientos",
    "trescientos",
    "cuatrocientos",
    "quinientos",
    "seiscientos",
    "setecientos",
    "ochocientos",
    "novecientos",
];
const ES_MONTHS: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

/// Cardinal number in Spanish words.
pub fn es_words(n: u64) -> String {
    fn below_thousand(n: u64) -> String {
        if n == 100 {
            return "cien".to_owned();
        }
        let (h, r) = (n / 100, n % 100);
        let mut parts = Vec::new();
        if h > 0 {
            parts.push(ES_HUNDREDS[h as usize].to_owned());
        }
        if r > 0 || h == 0 {
            parts.push(if r < 30 {
                ES_ONES[r as usize].to_owned()
            } else if r % 10 == 0 {
                ES_TENS[(r / 10) as usize].to_owned()
            } else {
                format!(
                    "{} y {}",
                    ES_TENS[(r / 10) as usize],
                    ES_ONES[(r % 10) as usize]
                )
            });
        }
        parts.join(" ")
    }
    // "uno" shortens to "un" before a noun such as "mil" or "millones".
    fn apocope(s: String) -> String {
        if s == "uno" {
            "un".to_owned()
        } else if let Some(head) = s.strip_suffix("uno") {
            format!("{head}ún").replace("veintiún", "veintiún")
        } else {
            s
        }
    }
    if n < 1000 {
        return below_thousand(n);
    }
    let mut parts = Vec::new();
    let mut rest = n;
    if rest >= 1_000_000 {
        let m = rest / 1_000_000;
        parts.push(if m == 1 {
            "un millón".to_owned()
        } else {
            format!("{} millones", apocope(es_words(m)))
        });
        rest %= 1_000_000;
    }
    if rest >= 1000 {
        let k = rest / 1000;
        parts.push(if k == 1 {
            "mil".to_owned()
        } else {
            format!("{} mil", apocope(below_thousand(k)))
        });
        rest %= 1000;
    }
    if rest > 0 {
        parts.push(below_thousand(rest));
    }
    parts.join(" ")
}

fn es_money(c: &Captures) -> String {
    let (unit, units, subs) = match &c[1] {
        "$" => ("dólar", "dólares", "centavos"),
        "€" => ("euro", "euros", "céntimos"),
        _ => ("libra", "libras", "peniques"),
    };
    let whole = num(&c[2]);
    let cents = c.get(3).map(|m| cents_of(m.as_str())).unwrap_or(0);
    let w = if whole == 1 {
        "un".to_owned()
    } else {
        es_words(whole)
    };
    let mut s = format!("{w} {}", if whole == 1 { unit } else { units });
    if cents > 0 {
        s = format!("{s} con {} {subs}", es_words(cents));
    }
    s
}

fn es_date(c: &Captures) -> String {
    let (d, m) = (num(&c[1]), num(&c[2]));
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return format!("{} barra {}", es_words(d), es_words(m));
    }
    let day = if d == 1 {
        "primero".to_owned()
    } else {
        es_words(d)
    };
    let mut s = format!("{day} de {}", ES_MONTHS[(m - 1) as usize]);
    if let Some(y) = c.get(3) {
        let mut y = num(y.as_str());
        if y < 100 {
            y += 2000;
        }
        s = format!("{s} de {}", es_words(y));
    }
    s
}

fn es_time(c: &Captures) -> String {
    let (h, m) = (num(&c[1]), num(&c[2]));
    match m {
        0 => format!("{} en punto", es_words(h)),
        _ => format!("{} y {}", es_words(h), es_words(m)),
    }
}

fn es_decimal(c: &Captures) -> String {
    format!("{} coma {}", es_words(num(&c[1])), es_words(num(&c[2])))
}

static ES: LazyLock<Rules> = LazyLock::new(|| Rules {
    words: es_words,
    rules: vec![
        (
            re(r"([$€£])\s?(\d{1,3}(?:[.,]\d{3})+|\d+)(?:[.,](\d{1,2}))?\b"),
            es_money,
        ),
        (
            re(r"(\d{1,3}(?:[.,]\d{3})+|\d+)(?:[.,](\d{1,2}))?\s?(€|euros?)"),
            |c| {
                let whole = num(&c[1]);
                let cents = c.get(2).map(|m| cents_of(m.as_str())).unwrap_or(0);
                let w = if whole == 1 {
                    "un euro".to_owned()
                } else {
                    format!("{} euros", es_words(whole))
                };
                if cents > 0 {
                    format!("{w} con {} céntimos", es_words(cents))
                } else {
                    w
                }
            },
        ),
        (re(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?\b"), es_date),
        (re(r"\b(\d{1,2}):(\d{2})\b"), es_time),
        (re(r"(\d+)\s?%"), |c| {
            format!("{} por ciento", es_words(num(&c[1])))
        }),
        (re(r"\b(\d{1,3}(?:\.\d{3})+)\b"), |c| es_words(num(&c[1]))),
        (re(r"\b(\d+),(\d+)\b"), es_decimal),
        (re(r"\bSr\.(\s)"), |c| format!("señor{}", &c[1])),
        (re(r"\bSra\.(\s)"), |c| format!("señora{}", &c[1])),
        (re(r"\bDr\.(\s)"), |c| format!("doctor{}", &c[1])),
        (re(r"\bDra\.(\s)"), |c| format!("doctora{}", &c[1])),
        (re(r"\bUd\.(\s)"), |c| format!("usted{}", &c[1])),
        (re(r"\betc\."), |_| "etcétera.".to_owned()),
        (re(r"\s&\s"), |_| " y ".to_owned()),
        (re(r"@"), |_| " arroba ".to_owned()),
    ],
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_numbers() {
        assert_eq!(en_words(0), "zero");
        assert_eq!(en_words(21), "twenty-one");
        assert_eq!(
            en_words(1_234_567),
            "one million two hundred thirty-four thousand five hundred sixty-seven"
        );
        assert_eq!(en_ordinal(21), "twenty-first");
        assert_eq!(en_ordinal(12), "twelfth");
        assert_eq!(en_ordinal(40), "fortieth");
    }

    #[test]
    fn the_issue_example_reads_correctly() {
        assert_eq!(
            normalize("$3.50 on 12/05", "en-US"),
            "three dollars and fifty cents on December fifth"
        );
    }

    #[test]
    fn english_rules() {
        let cases = [
            (
                "Dr. Smith arrived at 10:00.",
                "Doctor Smith arrived at ten o'clock.",
            ),
            (
                "It rose 12.5% in 1999.",
                "It rose twelve point five percent in nineteen ninety-nine.",
            ),
            (
                "the 3rd of 1,200 runners",
                "the third of one thousand two hundred runners",
            ),
            ("£1 and €2.05", "one pound and two euros and five cents"),
            (
                "on 7/4/2026 at 9:05",
                "on July fourth, twenty twenty-six at nine oh five",
            ),
            ("in 2005, 2010", "in two thousand five, twenty ten"),
            ("A & B", "A and B"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input, "en"), want, "{input}");
        }
    }

    #[test]
    fn spanish_rules() {
        assert_eq!(es_words(21), "veintiuno");
        assert_eq!(es_words(100), "cien");
        assert_eq!(es_words(101), "ciento uno");
        assert_eq!(es_words(2500), "dos mil quinientos");
        assert_eq!(es_words(21_000), "veintiún mil");
        assert_eq!(es_words(3_000_000), "tres millones");
        let cases = [
            (
                "Pagué $3.50 el 12/05",
                "Pagué tres dólares con cincuenta centavos el doce de mayo",
            ),
            ("Cuesta 20 €", "Cuesta veinte euros"),
            (
                "el 1/1/2024 a las 8:30",
                "el primero de enero de dos mil veinticuatro a las ocho y treinta",
            ),
            ("un 15% de 1.500", "un quince por ciento de mil quinientos"),
            ("Pi es 3,14", "Pi es tres coma catorce"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input, "es-ES"), want, "{input}");
        }
    }

    #[test]
    fn other_languages_are_left_to_espeak() {
        assert_eq!(normalize("Il a 3 chats.", "fr"), "Il a 3 chats.");
    }
}
