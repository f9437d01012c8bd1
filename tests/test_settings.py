"""The run's settings: one frozen value each adapter builds once and hands down to every file's check."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from flake8_autograd.adapters.command.runner import CheckOptions
from flake8_autograd.adapters.flake8_plugin import AutogradChecker
from flake8_autograd.checking.class_checks import rules_for
from flake8_autograd.core.conventions import CtxNames, TorchVersion
from flake8_autograd.core.settings import Settings
from flake8_autograd.rules import PREVIEW_CODES, PREVIEW_RULES, RULES


def test_settings_are_frozen_and_hashable() -> None:
    settings = Settings(("mypkg.Base",), True, frozenset({"AGF101"}), CtxNames(("ctx",)), TorchVersion(2, 4))
    assert hash(settings) == hash(dataclasses.replace(settings))
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.preview = False  # type: ignore[misc]


def test_the_rules_to_run_follow_the_codes_in_the_registry_order_and_are_worked_out_once() -> None:
    assert list(rules_for(Settings())) == RULES
    assert list(rules_for(Settings(preview=True))) == RULES + PREVIEW_RULES
    chosen = Settings(preview=True, preview_codes=frozenset({"AGF116", "AGF002"}))
    assert [rule.code for rule in rules_for(chosen)] == ["AGF001", "AGF002", "AGF116"]
    assert rules_for(chosen) is rules_for(dataclasses.replace(chosen, function_bases=("other.Base",)))


def test_the_flake8_plugin_builds_its_settings_once_from_the_options() -> None:
    before = AutogradChecker.settings
    try:
        AutogradChecker.parse_options(
            argparse.Namespace(autograd_preview=True, autograd_function_bases=[" mypkg.Base "],
                               autograd_ctx_names=["ctx", "*_ctx"], autograd_min_torch_version="2.4")
        )
        assert AutogradChecker.settings == Settings(
            ("mypkg.Base",), True, frozenset(PREVIEW_CODES), CtxNames(("ctx", "*_ctx")), TorchVersion(2, 4)
        )
    finally:
        AutogradChecker.settings = before


def test_the_command_builds_its_settings_once_with_its_options() -> None:
    options = CheckOptions(select=("AGF1",), preview=False, function_bases=("mypkg.Base",))
    assert options.settings == Settings(
        ("mypkg.Base",), False, frozenset(code for code in PREVIEW_CODES if code.startswith("AGF1"))
    )
    assert options.for_path("ops.py").settings is options.settings
    ignoring = dataclasses.replace(options, per_file_ignores=(("*.py", ("AGF101",)),)).for_path("ops.py")
    assert "AGF101" not in (ignoring.settings.preview_codes or ())
