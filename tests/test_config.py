"""Study configurations are found by name from any folder, packaged ones included."""

from __future__ import annotations

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
