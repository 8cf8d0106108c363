"""Study configurations are found by name from any folder, packaged ones included."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from rosenblatt.config import config_dirs, find_config, known_configs, load_config

PACKAGED = Path(str(resources.files("rosenblatt").joinpath("configs")))


def test_packaged_config_from_an_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = find_config("blobs")
    assert path.name == "blobs.yaml"
    assert path.parent.resolve() == PACKAGED.resolve()
    config = load_config("blobs")
    assert config["name"] == "blobs"
    assert config["study"]


def test_the_documented_configs_path_finds_the_packaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # README's `rosenblatt run configs/ntuple-example.yaml`, from a folder without configs/
    monkeypatch.chdir(tmp_path)
    path = find_config("configs/ntuple-example.yaml")
    assert path.resolve() == (PACKAGED / "ntuple-example.yaml").resolve()
    # a file of that name in the folder's own configs/ comes first
    local = tmp_path / "configs" / "ntuple-example.yaml"
    local.parent.mkdir()
    local.write_text("study: abcd\n", encoding="utf-8")
    assert find_config("configs/ntuple-example.yaml") == Path("configs/ntuple-example.yaml")


def test_packaged_configs_include_the_studies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert {"blobs", "lhco-quick"} <= set(known_configs())
    assert find_config("lhco-quick.yaml").name == "lhco-quick.yaml"


def test_configs_of_the_current_folder_come_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    local = tmp_path / "configs" / "blobs.yaml"
    local.parent.mkdir()
    local.write_text("study: blobs\nname: local-blobs\n")
    assert config_dirs()[0] == tmp_path / "configs"
    assert find_config("blobs") == local
    assert load_config("blobs")["name"] == "local-blobs"


def test_a_file_path_comes_before_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "blobs"
    own.write_text("study: blobs\n")
    assert find_config("blobs").resolve() == own.resolve()
    assert find_config(own) == own


def test_unknown_name_lists_the_known_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"no configuration 'no-such-study'.*blobs"):
        find_config("no-such-study")


LAUGHS = b"".join(
    [b"a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"]
    + [
        f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n".encode()
        for a, b in zip("abcdef", "bcdefg", strict=True)
    ]
    + [b"study: lhco\nclassifier: {options: *g}\n"]
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"", "top level: the file is empty"),
        (b"# only a comment\n", "top level: the file is empty"),
        (
            b"- study: blobs\n",
            "top level: a configuration is a mapping with a 'study' key, got list",
        ),
        (b"study: blobs\nseed: 1\xff\n", "line 2, column 8: not UTF-8 text (byte 0xff)"),
        (b"study: blobs\nirgi: [1\n", "line 3, column 1: not valid YAML: while parsing a flow"),
        (
            b"study: blobs\nseed: 1\nseed: 2\n",
            "line 3, column 1: not valid YAML: the key 'seed' is",
        ),
        (b"study: blobs\na: 1\x01\n", "line 2, column 5: not valid YAML: unacceptable character"),
        (
            b"study: blobs\n---\nstudy: lhco\n",
            "line 2, column 1: not valid YAML: expected a single",
        ),
        (
            b"study: !!python/name:os.system\n",
            "line 1, column 8: not valid YAML: could not determine",
        ),
        (b"study: blobs\nx: &x [*x]\n", "top level: a value contains itself"),
        (LAUGHS, "top level: expands to more than 1000000 values"),
        (b"name: x\n", "study: missing"),
        (b"study: [blobs]\n", "study: must name a study"),
        (b"study: cifar\n", "study: unknown study 'cifar'"),
        (b"study: blobs\nname: a/b\n", "name: must be a name usable as a file name"),
        (b"study: blobs\nname: null\n", "name: must be a name usable as a file name"),
    ],
)
def test_a_file_that_is_not_a_configuration_is_named_in_one_line(
    tmp_path: Path, text: bytes, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path}: {message}')}[^\n]*$"):
        load_config(path)


def test_merge_keys_may_override_what_they_merge(tmp_path: Path) -> None:
    path = tmp_path / "merged.yaml"
    path.write_text("study: blobs\nbase: &base {a: 1, b: 2}\nirgi: {<<: *base, b: 3}\n")
    assert load_config(path)["irgi"] == {"a": 1, "b": 3}


@pytest.mark.parametrize("kind", ["folder", "device", "missing"])
def test_a_path_that_is_no_file_says_what_it_is(tmp_path: Path, kind: str) -> None:
    path = {"folder": tmp_path, "device": Path("/dev/null"), "missing": tmp_path / "x.yaml"}[kind]
    what = {"folder": "is a folder", "device": "not a regular file", "missing": "no such file"}
    with pytest.raises(OSError, match=f"^{path}: {what[kind]}"):
        load_config(path)


def test_summaries_name_a_configuration_the_same_on_every_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rosenblatt.studies.config import config_label

    work = tmp_path / "work"
    (work / "configs").mkdir(parents=True)
    mine = work / "configs" / "mine.yaml"
    mine.write_text("study: blobs\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("study: blobs\n", encoding="utf-8")
    monkeypatch.chdir(work)
    assert config_label(find_config("lhco-paper")) == "rosenblatt/configs/lhco-paper.yaml"
    assert config_label(find_config("mine")) == "configs/mine.yaml"
    assert config_label(elsewhere) == elsewhere.resolve().as_posix()
