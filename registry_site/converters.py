"""URL converters that accept exactly the identifier grammar of benchpack.ids.

Every id the registry stores passed that grammar (bundle validation), so every
stored id reverses to a URL and every URL that routes names a storable id;
anything else is a 404 before a view runs. Registered in registry_site.urls.
"""

from __future__ import annotations

from django.urls import register_converter

from benchpack import ids


class _Grammar:
    regex = ""

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class PackIdConverter(_Grammar):
    regex = ids.ID_PATTERN


class BoardKeyConverter(_Grammar):
    """A case id, or a case id with its lane level (`short @rate=2/s`: the one with a `/`)."""

    regex = ids.BOARD_KEY_PATTERN


class ModelIdConverter(_Grammar):
    """Hub-style model ids keep their `/` (`mlx-community/Qwen2.5-0.5B-Instruct-4bit`)."""

    regex = ids.MODEL_PATTERN


class NameConverter(_Grammar):
    """Runtime names and hardware classes."""

    regex = ids.NAME_PATTERN


_REGISTERED = False


def register() -> None:
    global _REGISTERED
    if _REGISTERED:
        return
    register_converter(PackIdConverter, "packid")
    register_converter(BoardKeyConverter, "boardkey")
    register_converter(ModelIdConverter, "modelid")
    register_converter(NameConverter, "name")
    _REGISTERED = True
