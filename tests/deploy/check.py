"""Checks the deployment files with what runs without Docker or Kubernetes
(scripts/check-deploy.sh sets up the packages):

- deploy/compose.yaml against the Compose specification's JSON schema (as
  shipped in the docker-compose 1.29.2 wheel from PyPI);
- deploy/k8s/*.yaml against Kubernetes 1.37's OpenAPI schemas, strictly
  (kubernetes-validate from PyPI);
- the Dockerfile's stages (dockerfile-parse from PyPI);
- and what no schema knows: every MEDIAGEN_* variable is a documented
  setting, the workers together claim every job kind this build runs and
  none it does not, API processes run no workers, and every name one
  manifest uses another defines.

Usage: check.py <docker-compose wheel> <mediagen binary>
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

import jsonschema
import kubernetes_validate
import yaml
from dockerfile_parse import DockerfileParser

K8S_VERSION = "1.37.0"
failures = []


def fail(where, message):
    failures.append(f"{where}: {message}")


def settings():
    """The settings docs/configuration.md documents, as MEDIAGEN_* names."""
    text = open("docs/configuration.md").read()
    return {"MEDIAGEN_" + m.upper() for m in re.findall(r"^\| `([a-z_]+)` \|", text, re.M)}


def build_kinds(binary):
    """The job kinds this build runs, as the binary states them."""
    with tempfile.TemporaryDirectory() as data:
        out = subprocess.run(
            [binary, "worker", "--kinds", "?"],
            env={**os.environ, "MEDIAGEN_DATA_DIR": data, "MEDIAGEN_LOG": "error",
                 "MEDIAGEN_DATABASE_URL": ""},
            capture_output=True, text=True, timeout=120)
    found = re.search(r"this build runs: ([a-z0-9., ]+)\)", out.stderr)
    if not found:
        raise SystemExit(f"cannot read the job kinds from {binary}: {out.stderr[-500:]}")
    return {k.strip() for k in found.group(1).split(",")}


def check_env(where, names, documented):
    for name in names:
        if name.startswith("MEDIAGEN_") and name not in documented:
            fail(where, f"{name} is not a setting in docs/configuration.md")


def worker_kinds(where, args):
    """The kinds of a `worker --kinds a,b` command line."""
    if "worker" not in args:
        return set()
    if "--kinds" not in args:
        fail(where, "a worker without --kinds claims every kind; split them")
        return set()
    return {k.strip() for k in args[args.index("--kinds") + 1].split(",")}


def check_kinds(where, claimed, kinds):
    if claimed - kinds:
        fail(where, f"workers claim kinds this build lacks: {sorted(claimed - kinds)}")
    if kinds - claimed:
        fail(where, f"no worker claims: {sorted(kinds - claimed)}")


def compose(wheel, documented, kinds):
    where = "deploy/compose.yaml"
    with zipfile.ZipFile(wheel) as z:
        schema = json.loads(z.read("compose/config/compose_spec.json"))
    doc = yaml.safe_load(open(where))
    for error in jsonschema.Draft7Validator(schema).iter_errors(doc):
        fail(where, f"{'/'.join(map(str, error.absolute_path))}: {error.message}")
    claimed = set()
    for name, service in doc.get("services", {}).items():
        here = f"{where} service {name}"
        env = service.get("environment", {})
        check_env(here, env, documented)
        command = service.get("command", [])
        claimed |= worker_kinds(here, command)
        if command[:1] == ["serve"] and str(env.get("MEDIAGEN_WORKERS")) != "0":
            fail(here, "an API process of a scaled-out deployment runs no workers (MEDIAGEN_WORKERS=0)")
        for dep in service.get("depends_on", {}):
            if dep not in doc["services"]:
                fail(here, f"depends on unknown service {dep}")
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                if not os.path.exists(os.path.join("deploy", source)) and source != "../models":
                    fail(here, f"mounts missing {source}")
            elif source not in (doc.get("volumes") or {}):
                fail(here, f"mounts undeclared volume {source}")
    check_kinds(where, claimed, kinds)


def k8s(documented, kinds):
    docs = []
    for path in sorted(glob.glob("deploy/k8s/*.yaml")):
        for doc in yaml.safe_load_all(open(path)):
            if doc:
                docs.append((path, doc))
    defined = {(d["kind"], d["metadata"]["name"]) for _, d in docs}
    claimed = set()
    for path, doc in docs:
        here = f"{path} {doc['kind']}/{doc['metadata']['name']}"
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            fail(here, f"{'/'.join(map(str, e.path))}: {e.message}")
        spec = doc.get("spec", {})
        pod = spec.get("template", {}).get("spec", {})
        labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
        selector = spec.get("selector", {}).get("matchLabels")
        if doc["kind"] == "Deployment" and selector and any(labels.get(k) != v for k, v in selector.items()):
            fail(here, "the selector does not match the pod's labels")
        for container in pod.get("containers", []):
            names = [e["name"] for e in container.get("env", [])]
            check_env(here, names, documented)
            args = container.get("args", [])
            claimed |= worker_kinds(here, args)
            if args[:1] == ["serve"] and {"name": "MEDIAGEN_WORKERS", "value": "0"} not in container.get("env", []):
                fail(here, "API pods run no workers (MEDIAGEN_WORKERS=0)")
            for source in container.get("envFrom", []):
                for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                    if key in source and (kind, source[key]["name"]) not in defined:
                        fail(here, f"uses undefined {kind} {source[key]['name']}")
        for volume in pod.get("volumes", []):
            claim = volume.get("persistentVolumeClaim", {}).get("claimName")
            if claim and ("PersistentVolumeClaim", claim) not in defined:
                fail(here, f"uses undefined claim {claim}")
        if doc["kind"] == "HorizontalPodAutoscaler":
            target = spec["scaleTargetRef"]
            if (target["kind"], target["name"]) not in defined:
                fail(here, f"scales undefined {target['kind']} {target['name']}")
        if doc["kind"] == "Service":
            pods = [d for _, d in docs if d["kind"] == "Deployment" and all(
                d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in spec["selector"].items())]
            if not pods:
                fail(here, "selects no Deployment's pods")
        for data in (doc.get("data") or {}, doc.get("stringData") or {}):
            check_env(here, data, documented)
    check_kinds("deploy/k8s", claimed, kinds)
    if not any(d["kind"] == "Job" and "migrate" in json.dumps(d["spec"]) for _, d in docs):
        fail("deploy/k8s", "no migration Job")


def dockerfile():
    where = "Dockerfile"
    parser = DockerfileParser(path=where)
    steps = parser.structure
    stages = [s["value"] for s in steps if s["instruction"] == "FROM"]
    if len(stages) < 2:
        fail(where, "not a multi-stage build")
    if not any(s["instruction"] == "ARG" and s["value"].startswith("MODELS") for s in steps):
        fail(where, "no MODELS build argument (models mounted or baked in)")
    final = steps[max(i for i, s in enumerate(steps) if s["instruction"] == "FROM"):]
    value = lambda name: [s["value"] for s in final if s["instruction"] == name]
    if value("ENTRYPOINT") != ['["mediagen"]']:
        fail(where, f"the final stage's entrypoint is {value('ENTRYPOINT')}, not mediagen")
    if not value("USER") or value("USER")[-1] in ("root", "0"):
        fail(where, "the final stage runs as root")
    if "8080" not in " ".join(value("EXPOSE")):
        fail(where, "the final stage does not expose 8080 (MEDIAGEN_BIND)")
    for stage in re.findall(r"--from=([\w-]+)", parser.content):
        names = [s.split(" AS ")[-1].strip() for s in stages if " AS " in s]
        if stage not in names:
            fail(where, f"copies from unknown stage {stage}")


def main():
    wheel, binary = sys.argv[1:3]
    documented = settings()
    kinds = build_kinds(binary)
    compose(wheel, documented, kinds)
    k8s(documented, kinds)
    dockerfile()
    if failures:
        print("\n".join(failures))
        raise SystemExit(f"check-deploy: {len(failures)} problem(s)")
    print(f"check-deploy: compose, {len(glob.glob('deploy/k8s/*.yaml'))} Kubernetes files and the Dockerfile are valid; workers cover {len(kinds)} kinds")


main()
