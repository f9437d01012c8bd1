"""The build step pyproject.toml cannot say: docs/rules goes into the wheel as flake8_autograd/rule_pages,
which ``flake8-autograd --explain CODE`` prints. Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RULE_PAGES = Path(__file__).resolve().parent / "docs" / "rules"


class BuildWithRulePages(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or not RULE_PAGES.is_dir():
            return  # an editable install reads docs/rules where it is
        target = Path(self.build_lib, "flake8_autograd", "rule_pages")
        target.mkdir(parents=True, exist_ok=True)
        for page in sorted(RULE_PAGES.glob("AGF*.md")):
            shutil.copyfile(page, target / page.name)


setup(cmdclass={"build_py": BuildWithRulePages})
