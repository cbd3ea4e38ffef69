# Mandarin text to Kokoro phonemes: the Mandarin phonemizer's `phonemize`,
# served by g2p_serve.py (appended; it has the framing). misaki's Chinese
# reader as Kokoro's Mandarin voices were trained with it (its first,
# pinyin-based reading, not the later one of Kokoro v1.1-zh): numbers in
# words (cn2an: 2026年 二零二六年, 3点15分 三点十五分), words split by
# jieba, each read in pinyin (pypinyin) and written in IPA with tone arrows.
# Text other than Chinese characters, digits and punctuation never gets
# here: the server reads Latin-script words with its English voice.
import contextlib
import logging
import sys
import warnings

with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
    warnings.simplefilter("ignore")  # jieba's about pkg_resources
    import jieba
    from misaki import zh

    jieba.setLogLevel(logging.ERROR)
    # jieba keeps its prepared dictionary beside itself, in the environment
    # (written when scripts/g2p.sh first starts this script), not in /tmp.
    jieba.dt.tmp_dir = sys.prefix
    jieba.initialize()

G2P = zh.ZHG2P()


def phonemize(text):
    return G2P(text)[0]
