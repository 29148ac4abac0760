"""``.. cli-reference:: module:function``: the command-line reference, from its argparse parser.

The function returns the parser (``backpropviz.cli:build_parser``). Each
subcommand becomes a section (``backpropviz render``) with its usage, its
description, and one list per argument group: each argument's flags and
metavar, its help, its choices and its default. Nothing is written by hand,
so the page names exactly the options the parser has.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


class CliReference(SphinxDirective):
    """Sections for every subcommand of the parser that ``module:function`` returns."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module_name, _, function = self.arguments[0].partition(":")
        parser = getattr(importlib.import_module(module_name), function)()
        self.env.note_dependency(importlib.import_module(module_name).__file__)
        result: list[nodes.Node] = [*self._usage(parser), *self._groups(parser)]
        for name, subparser in _subcommands(parser):
            section = nodes.section()
            section += nodes.title(text=f"{parser.prog} {name}")
            section["names"].append(f"{parser.prog} {name}")
            self.state.document.note_implicit_target(section, section)
            section += self._usage(subparser)
            section += self._groups(subparser)
            if subparser.epilog:
                section += nodes.paragraph(text=subparser.epilog)
            result.append(section)
        return result

    def _usage(self, parser: argparse.ArgumentParser) -> list[nodes.Node]:
        usage = parser.format_usage().removeprefix("usage: ").strip()
        shown: list[nodes.Node] = [nodes.literal_block(usage, usage, classes=["cli-usage"])]
        if parser.description:
            shown.append(nodes.paragraph(text=parser.description))
        return shown

    def _groups(self, parser: argparse.ArgumentParser) -> list[nodes.Node]:
        shown: list[nodes.Node] = []
        for group in parser._action_groups:
            actions = [action for action in group._group_actions
                       if action.help != argparse.SUPPRESS]
            if not actions:
                continue
            shown.append(nodes.rubric(text=group.title or "arguments"))
            if group.description:
                shown.append(nodes.paragraph(text=group.description))
            listing = nodes.definition_list(classes=["cli-arguments"])
            for action in actions:
                listing += self._argument(parser, action)
            shown.append(listing)
        return shown

    def _argument(self, parser: argparse.ArgumentParser,
                  action: argparse.Action) -> nodes.definition_list_item:
        item = nodes.definition_list_item()
        term = nodes.term(classes=["cli-argument"])
        for k, flag in enumerate(_flags(parser, action)):
            if k:
                term += nodes.Text(", ")
            term += nodes.literal(flag, flag)
        item += term
        definition = nodes.definition()
        if isinstance(action, argparse._SubParsersAction):
            commands = nodes.bullet_list()
            for choice in action._choices_actions:
                entry = nodes.paragraph()
                entry += nodes.literal(choice.dest, choice.dest)
                entry += nodes.Text(f": {choice.help}")
                commands += nodes.list_item("", entry)
            definition += nodes.paragraph(text=_help(parser, action))
            definition += commands
        else:
            definition += nodes.paragraph(text=_help(parser, action))
            facts = _facts(action)
            if facts:
                definition += nodes.paragraph(text=facts, classes=["cli-facts"])
        for exclusive in parser._mutually_exclusive_groups:
            others = [flag for other in exclusive._group_actions if other is not action
                      for flag in other.option_strings[:1]]
            if action in exclusive._group_actions and others:
                definition += nodes.paragraph(text=f"Not with {', '.join(others)}.")
        item += definition
        return item


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """The parser's subcommands, in the order they were added."""
    return [(name, subparser) for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, subparser in action.choices.items()]


def _flags(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    """How the argument is written, as ``--help`` writes it: ``-o OUT``, ``--output OUT``,
    ``--rankdir {LR,RL,TB,BT,book}``, ``SCRIPT``, ``ROOT ...``."""
    formatter = parser._get_formatter()
    if not action.option_strings:
        return [formatter._format_args(action, formatter._get_default_metavar_for_positional(
            action))]
    if action.nargs == 0:
        return list(action.option_strings)
    args = formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
    return [f"{flag} {args}" for flag in action.option_strings]


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The argument's help as ``--help`` prints it (``%(default)s`` and the like filled in)."""
    if not action.help:
        return ""
    return parser._get_formatter()._expand_help(action)


def _facts(action: argparse.Action) -> str:
    """Its choices and its default, as a sentence, where its flags and help do not
    already say them ('' if nothing is left to say)."""
    facts = []
    if action.choices is not None and action.metavar is not None:
        facts.append("One of " + ", ".join(str(choice) for choice in action.choices) + ".")
    default = action.default
    if (action.option_strings and action.nargs != 0 and default is not None
            and default is not argparse.SUPPRESS and "default" not in (action.help or "")):
        facts.append(f"Default: {default}.")
    return " ".join(facts)


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("cli-reference", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
