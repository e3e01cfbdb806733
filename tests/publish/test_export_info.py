"""What an exported set says about itself (issue 28): licence, authors, description and
citation in the card and in Croissant (which mlcroissant then loads without a warning), and a
warning before sharing when the exported puzzles' answer-set audit is off or no licence was
given."""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from studio import splits
from studio.app import Studio
from studio.cli import main
from studio.core.errors import StudioError
from studio.curation import Curator
from studio.publish import export_set
from studio.publish.info import DatasetInfo
from studio.store.project import Project
from tests.publish.curated import PARAMS, SET_NAME

CITE = "@misc{small2026, title={Small}, author={Ada Lovelace and Alan Turing}, year={2026}}"


def croissant_warnings(folder: Path) -> list[str]:
    import mlcroissant as mlc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdflib's and pandas' own deprecations
        logging.getLogger("absl").setLevel(logging.ERROR)
        dataset = mlc.Dataset(jsonld=folder / "croissant.json")
    return sorted(dataset.metadata.ctx.issues.warnings)


def test_a_licensed_cited_export_loads_in_mlcroissant_without_warnings(
    project_copy: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "bench"
    code = main(
        [
            "-q", "export-set", str(project_copy), SET_NAME, str(out),
            "--license", "CC-BY-4.0", "--author", "Ada Lovelace", "--author", "Alan Turing",
            "--description", "Two-row glyph puzzles for a pilot.", "--cite", CITE,
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0 and "no licence" not in err
    assert croissant_warnings(out) == []
    meta = json.loads((out / "croissant.json").read_text("utf-8"))
    assert meta["license"] == "https://spdx.org/licenses/CC-BY-4.0.html"
    assert meta["citeAs"] == CITE
    assert [c["name"] for c in meta["creator"]] == ["Ada Lovelace", "Alan Turing"]
    assert meta["description"].startswith("Two-row glyph puzzles for a pilot.")
    card = (out / "README.md").read_text("utf-8")
    assert "Licence: [CC-BY-4.0](https://spdx.org/licenses/CC-BY-4.0.html)." in card
    assert "Authors: Ada Lovelace; Alan Turing." in card and CITE in card
    provenance = json.loads((out / "split.json").read_text("utf-8"))["curated"]
    assert provenance["dataset"]["license"] == "CC-BY-4.0"


def test_without_a_licence_the_export_warns_and_still_says_how_to_cite(
    project_copy: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "bench"
    assert main(["-q", "export-set", str(project_copy), SET_NAME, str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: no licence given" in err
    # before: two warnings (license and citeAs); a citation is now always made
    assert [w for w in croissant_warnings(out) if "citeAs" in w] == []
    assert len(croissant_warnings(out)) == 1
    meta = json.loads((out / "croissant.json").read_text("utf-8"))
    assert "license" not in meta and SET_NAME in meta["citeAs"]
    assert "Licence: **none given**" in (out / "README.md").read_text("utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--license", "CC BY 4.0"], "not an SPDX identifier"),
        (["--author", "Ada\x07"], "control character"),
        (["--cite", "x" * 20_000], "at most 10,000"),
    ],
)
def test_bad_metadata_is_refused_before_anything_is_written(
    project_copy: Path, tmp_path: Path, capsys, args: list[str], message: str
) -> None:
    out = tmp_path / "bench"
    assert main(["-q", "export-set", str(project_copy), SET_NAME, str(out), *args]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_dataset_info_from_what_a_person_typed() -> None:
    info = DatasetInfo.of(" CC0-1.0 ", "Ada Lovelace; ; Alan Turing ", "", "")
    assert info.license == "CC0-1.0" and info.authors == ("Ada Lovelace", "Alan Turing")
    assert info.citation("small", 2026, "eve").startswith(
        "Ada Lovelace; Alan Turing (2026). small."
    )
    assert DatasetInfo().citation("small", 2026, "eve").startswith("eve (2026). small.")
    with pytest.raises(StudioError, match="SPDX"):
        DatasetInfo.of("MIT; rm -rf")
    # review of issue 28: text that is no UTF-8, or that a reader sees other than it is
    for bad in ("Ada \udcff", "Ada\u202eecalevoL", "A\x85da", "Ada\u2028Turing"):
        with pytest.raises(StudioError, match="author"):
            DatasetInfo.of(authors=bad)


def test_an_unbalanced_answer_set_audit_warns_naming_the_values(
    project_copy: Path, tmp_path: Path, capsys
) -> None:
    """UA's own foil pool (the key is the odd one out) exported: the dialog and the CLI say the
    audit is off and name the values, not only the card."""
    params = replace(PARAMS, n=240, seed=5, answer_sets="ua")
    with Studio(Project.open(project_copy), author="carol") as studio:
        curator = Curator(studio)
        vetted = splits.generate_and_vet(studio, params)
        [set_id] = curator.import_results("ua-pool", params, vetted.results, vetted.all_verdicts)
        ids = [s.puzzle_id for s in studio.project.puzzle_summaries(set_id)]
        curator.set_status(ids, "approved")
        summary = export_set(studio, set_id, tmp_path / "direct")
    assert summary.audit_findings, "UA's pool should fail the key-rate audit"
    [audit_warning] = [w for w in summary.warnings() if "answer sets are not balanced" in w]
    assert "key rate per value" in audit_warning and "on the key" in audit_warning
    assert main(["-q", "export-set", str(project_copy), "ua-pool", str(tmp_path / "cli")]) == 0
    err = capsys.readouterr().err
    assert "warning: the exported puzzles' answer sets are not balanced" in err
