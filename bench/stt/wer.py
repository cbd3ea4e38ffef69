"""Word error rate of a hypothesis file against a reference file (lower
case, punctuation dropped). Usage: wer.py REFERENCE HYPOTHESIS"""
import re
import sys
import unicodedata


def words(text):
    """Lower-case words of any script (apostrophes kept, hyphens split)."""
    text = unicodedata.normalize("NFC", text.lower()).replace("\u2019", "'").replace("-", " ")
    return re.findall(r"[\w']+", text)


def wer(ref, hyp):
    r, h = words(ref), words(hyp)
    prev = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        cur = [i] + [0] * len(h)
        for j in range(1, len(h) + 1):
            cur[j] = min(prev[j - 1] + (r[i - 1] != h[j - 1]), prev[j] + 1, cur[j - 1] + 1)
        prev = cur
    return prev[-1] / max(1, len(r))


if __name__ == "__main__":
    print(f"{wer(open(sys.argv[1]).read(), open(sys.argv[2]).read()):.4f}")
