#!/usr/bin/env python3
"""The layout of a Hugging Face hub cache, as huggingface_hub's own functions write it,
for tests/cli/test_hf_cache.sh (`-m ORG/NAME` and `nectar list`).

No network: the cache is built in a temporary folder by the functions hf_hub_download uses
after a download (huggingface_hub.file_download: repo_folder_name for models--ORG--NAME,
_get_pointer_path for snapshots/COMMIT/FILE, _create_symlink for the relative link into
blobs/, _cache_commit_hash_for_specific_revision for refs/main), blobs named by the
SHA-256 of their bytes as the hub names LFS blobs. Then huggingface_hub itself is asked
where each model is: snapshot_download(repo_id, cache_dir=..., local_files_only=True)
(the offline path transformers takes) and scan_cache_dir. Repositories:
  nectar-test/tiny-qwen3   tests/fixtures/qwen3/tiny_bf16's files; refs/main names the second of
                           two commits (the first snapshot lacks the weights)
  nectar-test/st-max       tests/fixtures/st/st_max (a sentence-transformers folder, subfolders)
  other-org/gpt2-like      a config.json of model_type gpt2 only (nectar cannot run it)
Also asks huggingface_hub (constants.HF_HUB_CACHE, in a fresh interpreter per case) which
cache folder each combination of HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME,
XDG_CACHE_HOME and HOME means ("cache_dirs").
Writes tests/fixtures/hf_cache/layout.json: every folder, file (its source in the repository)
and link of the cache, relative to the cache folder, and "resolved": repo id -> the
snapshot folder huggingface_hub returned, relative to the cache folder.

Run: /path/to/python tools/make_hf_cache_fixture.py   (huggingface_hub)
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import huggingface_hub
from huggingface_hub import scan_cache_dir, snapshot_download
from huggingface_hub.file_download import (_cache_commit_hash_for_specific_revision, _create_symlink,
                                           _get_pointer_path, repo_folder_name)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "hf_cache", "layout.json")

REPOS = [
    ("nectar-test/tiny-qwen3", "tests/fixtures/qwen3/tiny_bf16",
     ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
      "tokenizer_config.json"]),
    ("nectar-test/st-max", "tests/fixtures/st/st_max",
     ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
      "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
      "1_Pooling/config.json", "2_Normalize/config.json"]),
]


def put(cache, repo_id, commit, rel, data, sources, src):
    storage = os.path.join(cache, repo_folder_name(repo_id=repo_id, repo_type="model"))
    blob = os.path.join(storage, "blobs", hashlib.sha256(data).hexdigest())
    os.makedirs(os.path.dirname(blob), exist_ok=True)
    with open(blob, "wb") as f:
        f.write(data)
    sources[os.path.relpath(blob, cache)] = src
    pointer = _get_pointer_path(storage, commit, rel)
    os.makedirs(os.path.dirname(pointer), exist_ok=True)
    _create_symlink(blob, pointer, new_blob=True)
    return storage


ENV_CASES = [
    {"HOME": "/h"},
    {"HOME": "/h", "XDG_CACHE_HOME": "/x"},
    {"HOME": "/h", "XDG_CACHE_HOME": "/x", "HF_HOME": "/hf"},
    {"HOME": "/h", "HF_HOME": "~/hfh"},
    {"HOME": "/h", "HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy"},
    {"HOME": "/h", "HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HUB_CACHE": "/c"},
    {"HOME": "/h", "HF_HUB_CACHE": "~/c2"},
]


def cache_dirs():
    out = []
    for env in ENV_CASES:
        r = subprocess.run([sys.executable, "-c",
                            "from huggingface_hub import constants; print(constants.HF_HUB_CACHE)"],
                           env={"PATH": os.environ.get("PATH", ""), **env}, capture_output=True,
                           text=True, check=True)
        out.append({"env": env, "dir": r.stdout.strip()})
    return out


def main():
    with tempfile.TemporaryDirectory() as cache:
        sources = {}
        for i, (repo_id, src_dir, files) in enumerate(REPOS):
            commits = [hashlib.sha1(f"{repo_id}{k}".encode()).hexdigest() for k in range(2)]
            for k, commit in enumerate(commits):
                for rel in files:
                    if k == 0 and rel.endswith(".safetensors"):
                        continue  # an older commit without the weights
                    with open(os.path.join(ROOT, src_dir, rel), "rb") as f:
                        storage = put(cache, repo_id, commit, rel, f.read(), sources,
                                      f"{src_dir}/{rel}")
            _cache_commit_hash_for_specific_revision(storage, "main", commits[1])
        gpt2 = b'{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}\n'
        commit = hashlib.sha1(b"gpt2").hexdigest()
        storage = put(cache, "other-org/gpt2-like", commit, "config.json", gpt2, sources, None)
        _cache_commit_hash_for_specific_revision(storage, "main", commit)

        resolved = {}
        for repo_id in [r[0] for r in REPOS] + ["other-org/gpt2-like"]:
            path = snapshot_download(repo_id, cache_dir=cache, local_files_only=True)
            resolved[repo_id] = os.path.relpath(path, cache)
        scanned = sorted(r.repo_id for r in scan_cache_dir(cache).repos)
        assert scanned == sorted(resolved), scanned

        dirs, files, links, refs = [], [], [], {}
        for d, subdirs, names in os.walk(cache):
            rd = os.path.relpath(d, cache)
            for s in sorted(subdirs):
                p = os.path.join(d, s)
                if not os.path.islink(p):
                    dirs.append(os.path.normpath(os.path.join(rd, s)))
            for n in sorted(names):
                p = os.path.join(d, n)
                rp = os.path.normpath(os.path.join(rd, n))
                if os.path.islink(p):
                    links.append({"path": rp, "target": os.readlink(p)})
                elif "/refs/" in "/" + rp:
                    with open(p) as f:
                        refs[rp] = f.read()
                else:
                    files.append({"path": rp, "source": sources[rp]})
        layout = {"made_by": f"huggingface_hub {huggingface_hub.__version__}",
                  "dirs": sorted(dirs), "files": files, "links": links, "refs": refs,
                  "gpt2_config": gpt2.decode(), "resolved": resolved,
                  "cache_dirs": cache_dirs()}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(layout, f, indent=1)
    print(OUT, len(files), "blobs", len(links), "links", resolved)


if __name__ == "__main__":
    main()
