"""Corpora nnrag was not developed on: index and validate them end to end, as a user would.

Runs the real CLI (``nnrag index`` then ``nnrag validate --all --report``) in a fresh cache
on pinned PyPI releases that none of the development corpora include, and records the
per-source stage rates and failure categories from the JSON report.

Run: nice python benchmarks/other_corpora_bench.py --set seen|holdout|frameworks [--cache DIR]
[--timeout 30] [--every K] [--out NAME]
Writes benchmarks/results/other_corpora_bench_<set>.{json,md} (or ``<NAME>``); ``--every K``
validates every K-th block of ``nnrag list`` (a fixed sample) instead of ``--all``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
SETS: dict[str, list[dict[str, Any]]] = {
    # looked at during development (bugs found there were fixed), so no longer unseen
    "seen": [
        {"name": "vit_pytorch", "pypi": "vit-pytorch==1.26.11"},
        {"name": "x_transformers", "pypi": "x-transformers==2.31.10"},
        {"name": "smp", "pypi": "segmentation-models-pytorch==0.6.0"},
        {"name": "monai", "pypi": "monai==1.6.1"},
    ],
    # chosen before their first run and measured once, at the end of a session
    "holdout": [
        {"name": "denoising_diffusion", "pypi": "denoising-diffusion-pytorch==2.3.4"},
        {"name": "efficientnet", "pypi": "efficientnet-pytorch==0.7.1"},
        {"name": "perceiver", "pypi": "perceiver-pytorch==0.11.0"},
        {"name": "lightly", "pypi": "lightly==1.6.0"},
        {"name": "pretrainedmodels", "pypi": "pretrainedmodels==0.7.4"},
        {"name": "performer", "pypi": "performer-pytorch==1.1.4"},
    ],
    # chosen on 2026-11-27 before their first run: a second holdout (an OpenMMLab codebase
    # with its framework as sources, equivariant and protein and speech models, a repackaged
    # repository layout)
    "holdout2": [
        {"name": "kornia", "pypi": "kornia==0.9.0"},
        {"name": "mmaction", "pypi": "mmaction2==1.2.0", "paths": ["mmaction/models"]},
        {"name": "mmengine", "pypi": "mmengine==0.10.7", "paths": ["mmengine/model"]},
        {"name": "mmcv", "pypi": "mmcv-lite==2.2.0", "paths": ["mmcv/cnn"]},
        {"name": "e3nn", "pypi": "e3nn==0.6.0"},
        {"name": "esm", "pypi": "fair-esm==2.0.0"},
        {
            "name": "speechbrain",
            "pypi": "speechbrain==1.1.2",
            "paths": ["speechbrain/lobes", "speechbrain/nnet"],
        },
        {"name": "yolov5", "pypi": "yolov5==7.0.14", "paths": ["yolov5/models"]},
    ],
    # chosen on 2026-11-27, second session, before their first run: an OpenMMLab codebase
    # built on mmdet, an adapter library over transformers, an sdist, a repository-style
    # release, EEG and medical-segmentation architectures, annotated paper implementations.
    # Needs its own environment (torch, then: numpy einops prettytable accelerate psutil
    # pyyaml tqdm safetensors huggingface_hub labml fairscale torchinfo docstring_inheritance
    # skorch mne pandas h5py pydantic linear_attention_transformer scipy)
    "holdout3": [
        {"name": "mmyolo", "pypi": "mmyolo==0.6.0", "paths": ["mmyolo/models"]},
        {"name": "mmdet", "pypi": "mmdet==3.3.0", "paths": ["mmdet/models/necks"]},
        {"name": "mmengine", "pypi": "mmengine==0.10.7", "paths": ["mmengine/model/wrappers"]},
        {"name": "mmcv", "pypi": "mmcv-lite==2.2.0", "paths": ["mmcv/cnn/bricks"]},
        {"name": "segment_anything", "pypi": "segment-anything==1.0"},
        {"name": "encodec", "pypi": "encodec==0.1.1"},
        {
            "name": "braindecode",
            "pypi": "braindecode==1.8.1",
            "paths": ["braindecode/models", "braindecode/modules"],
        },
        {"name": "dynamic_network_architectures", "pypi": "dynamic-network-architectures==0.4.4"},
        {"name": "labml_nn", "pypi": "labml-nn==0.5.1"},
        {"name": "peft", "pypi": "peft==0.21.2", "paths": ["peft/tuners/lora"]},
        {
            "name": "transformers",
            "pypi": "transformers==4.57.6",
            "paths": ["transformers/activations.py"],
        },
    ],
    # chosen on 2026-11-27, second session, after holdout3 and before their first run: a
    # library whose runtime dependency is a second source (gpytorch on linear_operator), a
    # fork of a development corpus's ecosystem (torch_geometric as a source), sdists with
    # function registries (fairseq's ``@register_model``) and builder functions
    # (pytorchvideo), a modern LLM component library, a quantizer library. Environment:
    # holdout3's, then: scikit-learn mpmath fvcore iopath networkx decorator hydra-core
    # omegaconf bitarray sacrebleu regex einx loguru tiktoken sentencepiece blobfile tokenizers
    "holdout4": [
        {"name": "gpytorch", "pypi": "gpytorch==1.15.2"},
        {
            "name": "linear_operator",
            "pypi": "linear-operator==0.6.1",
            "paths": ["linear_operator/utils/getitem.py"],
        },
        {
            "name": "pytorchvideo",
            "pypi": "pytorchvideo==0.1.5",
            "paths": ["pytorchvideo/models", "pytorchvideo/layers"],
        },
        {
            "name": "tg_temporal",
            "pypi": "torch-geometric-temporal==0.56.2",
            "paths": ["torch_geometric_temporal/nn"],
        },
        {
            "name": "torch_geometric",
            "pypi": "torch-geometric==2.8.1",
            "paths": ["torch_geometric/nn/conv/gcn_conv.py"],
        },
        {
            "name": "fairseq",
            "pypi": "fairseq==0.12.2",
            "paths": ["fairseq/models/transformer", "fairseq/modules"],
        },
        {"name": "vector_quantize", "pypi": "vector-quantize-pytorch==1.32.0"},
        {"name": "torchtune", "pypi": "torchtune==0.6.1", "paths": ["torchtune/modules"]},
    ],
    # image-restoration architectures (many one-file research repos vendored into one
    # package), spiking nets, metric-learning losses, neural operators, normalizing flows,
    # tabular attention; chosen before their first run. Environment: holdout4's, then
    # spandrel snntorch pytorch-metric-learning neuraloperator zuko pytorch-tabnet nflows
    # (no torchvision: no release here matches torch 2.13)
    "holdout5": [
        {"name": "spandrel", "pypi": "spandrel==0.4.2", "paths": ["spandrel/architectures"]},
        {"name": "snntorch", "pypi": "snntorch==1.0.0"},
        {"name": "metric_learning", "pypi": "pytorch-metric-learning==2.9.0"},
        {
            "name": "neuralop",
            "pypi": "neuraloperator==2.0.0",
            "paths": ["neuralop/layers", "neuralop/models"],
        },
        {"name": "zuko", "pypi": "zuko==1.6.0"},
        {"name": "tabnet", "pypi": "pytorch-tabnet==4.1.0"},
        {"name": "nflows", "pypi": "nflows==0.14"},
    ],
    "holdout6": [
        {"name": "ncps", "pypi": "ncps==1.0.1"},
        {"name": "torchdiffeq", "pypi": "torchdiffeq==0.2.5"},
        {"name": "deepctr", "pypi": "deepctr-torch==0.3.0"},
        {"name": "rotary", "pypi": "rotary-embedding-torch==0.9.1"},
        {"name": "pykan", "pypi": "pykan==0.2.8"},
        {"name": "torchmetrics", "pypi": "torchmetrics==1.9.0"},
        {"name": "tcn", "pypi": "pytorch-tcn==1.2.3"},
        {"name": "torchsde", "pypi": "torchsde==0.2.6"},
    ],
    # chosen before their first run: reinforcement-learning policies, probabilistic modules
    # (PyroModule's metaclass), equivariant irreps layers, audio front ends, controlled
    # differential equations and an image metric. Environment: torch, then each package's
    # declared runtime dependencies (gymnasium cloudpickle pyro-api opt-einsum opt-einsum-fx
    # sympy scipy tqdm torchdiffeq torchsde), without the packages themselves.
    "holdout7": [
        {"name": "sb3", "pypi": "stable-baselines3==2.9.2"},
        {"name": "pyro", "pypi": "pyro-ppl==1.9.2"},
        {"name": "e3nn", "pypi": "e3nn==0.6.0"},
        {"name": "filterbanks", "pypi": "asteroid-filterbanks==0.4.0"},
        {"name": "nnaudio", "pypi": "nnaudio==0.3.4"},
        {"name": "julius", "pypi": "julius==0.2.8"},
        {"name": "torchcde", "pypi": "torchcde==0.2.5"},
        {"name": "msssim", "pypi": "pytorch-msssim==1.0.0"},
    ],
    # chosen before their first run: a pure-PyTorch Mamba, a builder-style U-Net library, a
    # CRF layer, tabular models (two releases), a scattering-transform front end, audio
    # losses, xLSTM (dataclass configs, optional kernels) and RWKV. Environment: torch, then
    # each package's declared runtime dependencies (numpy einops data-science-types scipy
    # appdirs configparser packaging discrete-continuous-embed-readout hyper-connections
    # x-mlps-pytorch PyYAML safetensors ninja mlstm_kernels tokenizers matplotlib), without
    # the packages themselves.
    "holdout8": [
        {"name": "mambapy", "pypi": "mambapy==1.2.0"},
        {"name": "a_unet", "pypi": "a-unet==0.0.16"},
        {"name": "crf", "pypi": "pytorch-crf==0.7.2"},
        {"name": "rtdl", "pypi": "rtdl-revisiting-models==0.0.2"},
        {"name": "tab_transformer", "pypi": "tab-transformer-pytorch==0.6.1"},
        {"name": "kymatio", "pypi": "kymatio==0.3.0"},
        {"name": "auraloss", "pypi": "auraloss==0.4.0"},
        {"name": "xlstm", "pypi": "xlstm==2.0.6"},
        {"name": "rwkv", "pypi": "rwkv==0.8.32"},
    ],
    # chosen before their first run: knowledge-graph embeddings built through class
    # resolvers (pykeen), normalizing flows (an sdist), a physics-informed library that picks
    # its backend by name (deepxde), SE(3)/E(n)-equivariant networks, a U-Net, probabilistic
    # forecasting models (gluonts' torch part) and a mixture of experts. Environment: torch,
    # then each package's declared runtime dependencies, without the packages themselves.
    "holdout9": [
        {"name": "pykeen", "pypi": "pykeen==1.11.1", "paths": ["pykeen/nn", "pykeen/models"]},
        {"name": "normflows", "pypi": "normflows==1.7.3"},
        {"name": "deepxde", "pypi": "deepxde==1.15.0", "paths": ["deepxde/nn/pytorch"]},
        {"name": "se3", "pypi": "se3-transformer-pytorch==0.9.0"},
        {"name": "x_unet", "pypi": "x-unet==0.5.0"},
        {"name": "gluonts", "pypi": "gluonts==0.17.0", "paths": ["gluonts/torch"]},
        {"name": "egnn", "pypi": "egnn-pytorch==0.2.8"},
        {"name": "moe", "pypi": "mixture-of-experts==0.2.3"},
    ],
    # framework-style releases (config-driven model classes, mixins with loading machinery),
    # first run on 2026-11-25 (issue 12/13 follow-up), so seen from then on
    "frameworks": [
        {"name": "diffusers", "pypi": "diffusers==0.35.1", "paths": ["diffusers/models"]},
        {"name": "open_clip", "pypi": "open_clip_torch==3.2.0", "paths": ["open_clip"]},
    ],
}
STAGES = ("closed", "import", "instantiate", "forward")


def run(command: list[str], *, log: Path) -> float:
    """Run one CLI command, keep its output in ``log``, return its wall time."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    log.write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    if done.returncode not in (0, 1):  # 1: some block failed, which is expected
        sys.exit(f"{' '.join(command)} exited {done.returncode}; see {log}")
    return seconds


def sample(nnrag: list[str], common: list[str], every: int) -> list[str]:
    """Every ``every``-th block id of ``nnrag list`` (sorted ids: the same sample each run)."""
    listed = subprocess.run(
        [*nnrag, "list", *common, "--json"], capture_output=True, text=True, check=True
    )
    ids = sorted(block["id"] for block in json.loads(listed.stdout))
    return ids[::every]


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st ..."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def summarize(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per source: blocks, rate per stage, failure categories (stage/category -> count)."""
    rows = []
    for name, source in sorted(report["summary"]["sources"].items()):
        blocks = source["blocks"]
        stages = source["stages"]
        failures: Counter[str] = Counter(
            f"{b['failed_stage']}/{b['category']}"
            for b in report["blocks"]
            if b["source"] == name and b["outcome"] != "passed"
        )
        rows.append(
            {
                "source": name,
                "blocks": blocks,
                "rates": {s: round(100 * stages[s]["passed"] / max(blocks, 1), 1) for s in STAGES},
                "failures": dict(failures.most_common()),
            }
        )
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# other corpora: {result['set']}",
        "",
        "Releases outside the three development corpora, indexed and validated through the CLI",
        f"in a fresh cache (`nice python benchmarks/other_corpora_bench.py --set {result['set']}`;",
        "`seen`: looked at during development, `holdout`: chosen before their first run and",
        f"measured once at the end of a session): index {result['index_s']} s,",
        f"validate {result['validate_s']} s for {result['blocks']} blocks "
        f"({result.get('sample', 'all blocks')}; {result['timeout_s']} s timeout per block; "
        "1-minute load average at the end "
        f"{result['load_average_1m_at_end']} on 2 cores).",
        "",
        "| source | release | blocks | closed | import | instantiate | forward |",
        "|---|---|---|---|---|---|---|",
    ]
    releases = {s["name"]: s["pypi"] for s in SETS[result["set"]]}
    for row in result["sources"]:
        rates = row["rates"]
        lines.append(
            f"| {row['source']} | {releases.get(row['source'], '')} | {row['blocks']} | "
            + " | ".join(f"{rates[s]}%" for s in STAGES)
            + " |"
        )
    for row in result["sources"]:
        lines += ["", f"Failures, {row['source']}: "]
        lines[-1] += ", ".join(f"{k} {v}" for k, v in row["failures"].items()) or "none"
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", choices=sorted(SETS), required=True)
    parser.add_argument("--cache", help="cache folder (default: a new temporary folder)")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--every", type=int, default=0, help="validate every K-th block only")
    parser.add_argument("--out", help="results file stem (default: other_corpora_bench_<set>)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nnrag-other-corpora-"))
    cache = Path(args.cache) if args.cache else work / "cache"
    repos = work / "repos.json"
    repos.write_text(json.dumps({"sources": SETS[args.set]}, indent=1))
    nnrag = [sys.executable, "-m", "nnrag.cli"]
    common = ["--repos", str(repos), "--cache", str(cache)]
    index_s = run([*nnrag, "index", *common], log=work / "index.log")
    report_path = work / "report.json"
    validate_s = run(
        [
            *nnrag,
            "validate",
            *common,
            *(sample(nnrag, common, args.every) if args.every else ["--all"]),
            "--timeout",
            str(args.timeout),
            "--report",
            str(report_path),
        ],
        log=work / "validate.log",
    )
    report = json.loads(report_path.read_text())
    result = {
        "set": args.set,
        "index_s": round(index_s, 1),
        "validate_s": round(validate_s, 1),
        "timeout_s": args.timeout,
        "sample": f"every {ordinal(args.every)} block of `nnrag list`"
        if args.every
        else "all blocks",
        "blocks": report["summary"]["blocks"],
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "sources": summarize(report),
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / (args.out or f"other_corpora_bench_{args.set}")
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
