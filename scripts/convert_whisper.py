"""Converts a faster-whisper (CTranslate2) model into a whisper.cpp ggml file.

Our own converter, in plain Python (no numpy): it reads CTranslate2's
`model.bin`, splits the fused attention projections back into query, key and
value, renames every tensor to whisper.cpp's names, and takes the mel filter
bank and the tokenizer from the `openai-whisper` source package's assets.

Usage: convert_whisper.py CT2_DIR WHISPER_ASSETS_DIR OUT.bin
"""
import ast
import base64
import re
import struct
import sys
import zipfile

F32, F16, I8, I16 = 0, 4, 1, 2  # CTranslate2 dtype ids


def read_ct2(path):
    """Variables of a CTranslate2 model.bin: name -> (dims, dtype, bytes)."""
    out = {}
    with open(path, "rb") as f:
        u32 = lambda: struct.unpack("<I", f.read(4))[0]
        u16 = lambda: struct.unpack("<H", f.read(2))[0]
        u8 = lambda: struct.unpack("<B", f.read(1))[0]
        s = lambda: f.read(u16())[:-1].decode()
        version = u32()
        if version < 5:
            raise SystemExit(f"unsupported CTranslate2 model version {version}")
        s()  # spec name
        u32()  # spec revision
        for _ in range(u32()):
            name, rank = s(), u8()
            dims = [u32() for _ in range(rank)]
            dtype, nbytes = u8(), u32()
            out[name] = (dims, dtype, f.read(nbytes))
        for _ in range(u32()):
            alias, target = s(), s()
            out[alias] = out[target]
    return out


def f16_to_f32(raw):
    n = len(raw) // 2
    return struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", raw))


def read_npy(data):
    """A little-endian float32 .npy array: (shape, raw bytes)."""
    assert data[:6] == b"\x93NUMPY", "not an npy file"
    major = data[6]
    header_len = struct.unpack("<H" if major == 1 else "<I", data[8:10] if major == 1 else data[8:12])[0]
    start = 10 if major == 1 else 12
    header = ast.literal_eval(data[start:start + header_len].decode("latin1"))
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    return header["shape"], data[start + header_len:]


def tokens(path):
    ranked = []
    for line in open(path, "rb"):
        if line.strip():
            tok, rank = line.split()
            ranked.append((int(rank), base64.b64decode(tok)))
    return [t for _, t in sorted(ranked)]


def convert(ct2_dir, assets, out_path):
    v = read_ct2(f"{ct2_dir}/model.bin")
    n_vocab, n_text_state = v["decoder/embeddings/weight"][0]
    n_audio_state, n_mels, _ = v["encoder/conv1/weight"][0]
    n_audio_ctx = v["encoder/position_encodings/encodings"][0][0]
    n_text_ctx = v["decoder/position_encodings/encodings"][0][0]
    head = lambda k: struct.unpack("<h", v[k][2])[0] if k in v else None
    n_audio_head = head("encoder/num_heads") or n_audio_state // 64
    n_text_head = head("decoder/num_heads") or n_text_state // 64
    layers = lambda side: len({k.split("/")[1] for k in v if re.match(rf"{side}/layer_\d+/", k)})
    n_audio_layer, n_text_layer = layers("encoder"), layers("decoder")

    tensors = []  # (name, dims in numpy order, ftype, raw bytes in that ftype)

    def add(name, key, rows=None, as_f32=False, shape=None):
        dims, dtype, raw = v[key]
        if dtype != F16:
            raise SystemExit(f"{key}: expected float16 weights, found dtype {dtype}")
        if rows is not None:
            a, b = rows
            width = len(raw) // dims[0]
            raw = raw[a * width:b * width]
            dims = [b - a] + dims[1:]
        if shape is not None:
            dims = shape
        if as_f32 or len(dims) < 2:
            tensors.append((name, dims, 0, f16_to_f32(raw)))
        else:
            tensors.append((name, dims, 1, raw))

    def check_zero(key, a, b):
        raw = v[key][2][a * 2:b * 2]
        if any(struct.unpack(f"<{b - a}e", raw)):
            print(f"warning: {key}[{a}:{b}] (a key bias) is not zero; whisper.cpp has none", file=sys.stderr)

    def ln(dst, src):
        add(f"{dst}.weight", f"{src}/gamma")
        add(f"{dst}.bias", f"{src}/beta")

    def lin(dst, src, rows=None):
        add(f"{dst}.weight", f"{src}/weight", rows)
        add(f"{dst}.bias", f"{src}/bias", rows)

    def fused_self_attention(dst, src, n):
        add(f"{dst}.query.weight", f"{src}/linear_0/weight", (0, n))
        add(f"{dst}.query.bias", f"{src}/linear_0/bias", (0, n))
        add(f"{dst}.key.weight", f"{src}/linear_0/weight", (n, 2 * n))
        check_zero(f"{src}/linear_0/bias", n, 2 * n)
        add(f"{dst}.value.weight", f"{src}/linear_0/weight", (2 * n, 3 * n))
        add(f"{dst}.value.bias", f"{src}/linear_0/bias", (2 * n, 3 * n))
        lin(f"{dst}.out", f"{src}/linear_1")

    add("encoder.conv1.weight", "encoder/conv1/weight")
    add("encoder.conv1.bias", "encoder/conv1/bias", shape=[n_audio_state, 1], as_f32=True)
    add("encoder.conv2.weight", "encoder/conv2/weight")
    add("encoder.conv2.bias", "encoder/conv2/bias", shape=[n_audio_state, 1], as_f32=True)
    add("encoder.positional_embedding", "encoder/position_encodings/encodings", as_f32=True)
    for i in range(n_audio_layer):
        src, dst = f"encoder/layer_{i}", f"encoder.blocks.{i}"
        fused_self_attention(f"{dst}.attn", f"{src}/self_attention", n_audio_state)
        ln(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        ln(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
        lin(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        lin(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
    ln("encoder.ln_post", "encoder/layer_norm")
    add("decoder.token_embedding.weight", "decoder/embeddings/weight")
    add("decoder.positional_embedding", "decoder/position_encodings/encodings", as_f32=True)
    for i in range(n_text_layer):
        src, dst = f"decoder/layer_{i}", f"decoder.blocks.{i}"
        fused_self_attention(f"{dst}.attn", f"{src}/self_attention", n_text_state)
        ln(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
        lin(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
        add(f"{dst}.cross_attn.key.weight", f"{src}/attention/linear_1/weight", (0, n_text_state))
        check_zero(f"{src}/attention/linear_1/bias", 0, n_text_state)
        add(f"{dst}.cross_attn.value.weight", f"{src}/attention/linear_1/weight", (n_text_state, 2 * n_text_state))
        add(f"{dst}.cross_attn.value.bias", f"{src}/attention/linear_1/bias", (n_text_state, 2 * n_text_state))
        lin(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
        ln(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
        ln(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
        lin(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
        lin(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
    ln("decoder.ln", "decoder/layer_norm")

    with zipfile.ZipFile(f"{assets}/mel_filters.npz") as z:
        mel_shape, mel = read_npy(z.read(f"mel_{n_mels}.npy"))
    multilingual = n_vocab >= 51865
    vocab = tokens(f"{assets}/{'multilingual' if multilingual else 'gpt2'}.tiktoken")
    if not multilingual and len(vocab) == 50256:
        # gpt2.tiktoken leaves out its end-of-text token; the English-only
        # models list it as token 50256.
        vocab.append(b"<|endoftext|>")

    with open(out_path, "wb") as out:
        out.write(struct.pack("<i", 0x67676D6C))
        for x in (n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
                  n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, 1):
            out.write(struct.pack("<i", x))
        out.write(struct.pack("<ii", *mel_shape))
        out.write(mel)
        out.write(struct.pack("<i", len(vocab)))
        for t in vocab:
            out.write(struct.pack("<i", len(t)))
            out.write(t)
        for name, dims, ftype, raw in tensors:
            key = name.encode()
            out.write(struct.pack("<iii", len(dims), len(key), ftype))
            for d in reversed(dims):
                out.write(struct.pack("<i", d))
            out.write(key)
            out.write(raw)
    print(f"converted: {n_audio_layer}+{n_text_layer} layers, width {n_audio_state}, "
          f"{n_audio_head} heads, vocab {n_vocab}, {len(tensors)} tensors -> {out_path}")


if __name__ == "__main__":
    convert(*sys.argv[1:4])
