"""Per-sample records for forward arguments it reads by attribute (fields, meta facts, nested
records), on small hand-made modules."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from nnrag.validate.probe.samples import field_value
from tests.integration.test_probe_documented import run_in_child

pytestmark = pytest.mark.integration

RECORDS = '''
from typing import List, Optional, Sequence

import torch
from torch import nn


class Record:
    """Fields by attribute, facts by a mapping."""

    def get(self, key, default=None):
        return getattr(self, key, default)

    def __init__(self, *, metainfo: Optional[dict] = None, **fields) -> None:
        self._meta = dict(metainfo or {})
        for key, value in self._meta.items():
            object.__setattr__(self, key, value)
        for key, value in fields.items():
            setattr(self, key, value)

    @property
    def metainfo(self) -> dict:
        return dict(self._meta)

    def set_metainfo(self, metainfo: dict) -> None:
        self._meta.update(metainfo)
        for key, value in metainfo.items():
            object.__setattr__(self, key, value)


class Rows(Record):
    def __len__(self) -> int:
        return 0


class Sample(Record):
    @property
    def truth(self) -> Rows:
        return self._truth

    @truth.setter
    def truth(self, value: Rows) -> None:
        object.__setattr__(self, "_truth", value)


Samples = List[Sample]


class Resize(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, inputs: torch.Tensor, samples: Samples):
        out = self.conv(inputs)
        for sample in samples:
            h, w = sample.img_shape
            sample.set_metainfo({"batch_shape": tuple(out.shape[-2:])})
            sample.truth.boxes[:, 0::2] *= 2.0
            sample.truth.labels.clamp_(max=h * w)
            assert sample.metainfo["pad_shape"] == (h, w)
        return out, samples


class Unannotated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, inputs, samples):
        out = self.conv(inputs)
        for sample in samples:
            sample.set_metainfo({"batch_shape": tuple(out.shape[-2:])})
            sample.truth.boxes[:, 0::2] *= 2.0
        return out


class Preprocess(nn.Module):
    def forward(self, data: dict, training: bool = False):
        inputs, data_samples = data["inputs"], data["data_samples"]
        for sample in data_samples:
            sample.set_metainfo({"batch_shape": tuple(inputs.shape[-2:])})
        return {"inputs": inputs * 2, "data_samples": data_samples}


class Marker:
    """An empty stand-in: the file only tests against it."""


class Checked(nn.Module):
    def forward(self, x: torch.Tensor, samples: List[Marker]):
        return x * samples[0].get("scale_factor")[0]


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, feat: torch.Tensor, data_samples: Optional[Sequence[Sample]] = None):
        ratios = [s.get("valid_ratio") for s in data_samples]
        return self.proj(feat) * min(ratios)
'''


def test_records_a_forward_reads_by_attribute_grow_their_fields(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, RECORDS, "Resize")
    assert result["failed_stage"] is None, result["message"]
    image, samples = result["recipe"]["inputs"]
    assert image["shape"][0] == len(samples) == 2  # one record per image of the batch
    sample = samples[0]
    assert sample["__call__"] == {"__ref__": "nnrag_block:Sample"}
    # facts in the constructor's mapping, sized like the image
    side = image["shape"][-2:]
    assert sample["kwargs"]["metainfo"]["__dict__"] == {
        "img_shape": {"__tuple__": side},
        "pad_shape": {"__tuple__": side},
    }
    # the property's setter takes a Rows: an empty one, then the fields read from it
    truth = sample["__set__"]["truth"]
    assert truth["__call__"] == {"__ref__": "nnrag_block:Rows"}
    assert truth["__set__"]["boxes"]["shape"] == [3, 4]
    assert truth["__set__"]["labels"]["dtype"] == "int64"


def test_an_unannotated_argument_tries_each_class_with_the_method_it_calls(
    tmp_path: Path,
) -> None:
    result = run_in_child(tmp_path, RECORDS, "Unannotated")
    assert result["failed_stage"] is None, result["message"]
    samples = result["recipe"]["inputs"][1]
    # Rows and Sample (the most derived classes with set_metainfo) are both tried; only a
    # Sample has the ``truth`` forward reads next
    assert [s["__call__"]["__ref__"] for s in samples] == ["nnrag_block:Sample"] * 2
    assert samples[0]["__set__"]["truth"]["__set__"]["boxes"]["shape"] == [3, 4]


def test_field_values_by_name() -> None:
    assert field_value("ori_shape", [8, 12]) == {"__tuple__": [8, 12]}
    assert field_value("scale_factor", [8, 8]) == {"__tuple__": [1.0, 1.0]}
    assert field_value("bboxes", [8, 8])["shape"] == [3, 4]
    assert field_value("masks", [8, 12]) == {"shape": [3, 8, 12], "dtype": "bool"}
    assert field_value("img_path", [8, 8]) is None  # the name says nothing: no guess


def test_an_entry_of_a_dict_input_becomes_records_of_the_class_named_like_its_key(
    tmp_path: Path,
) -> None:
    result = run_in_child(tmp_path, RECORDS, "Preprocess")
    assert result["failed_stage"] is None, result["message"]
    entries = result["recipe"]["inputs"][0]["__dict__"]
    assert entries["inputs"]["dtype"] == "float32"  # the first entry stays the input
    # Rows and Sample have set_metainfo; ``data_samples`` names a Sample
    assert [s["__call__"]["__ref__"] for s in entries["data_samples"]] == ["nnrag_block:Sample"] * 2


def test_facts_forward_reads_by_key_come_with_the_records(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, RECORDS, "Encoder")
    assert result["failed_stage"] is None, result["message"]
    sample = result["recipe"]["inputs"][1][0]  # the None default, given after the error
    assert sample["kwargs"]["metainfo"]["__dict__"] == {"valid_ratio": 1.0}


def test_an_empty_stand_in_is_no_record(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, RECORDS, "Checked")
    assert result["failed_stage"] == "forward"
    assert "Marker" not in repr(result["recipe"]["inputs"])
