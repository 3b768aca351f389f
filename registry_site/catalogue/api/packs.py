"""The pack object of the API: a pack id with the words the pages show for it (issue 32 item 5).

`pack_id` stays the key every filter and URL takes; `pack` says what that pack is to a
person: its kind of work and title (registry_site.catalogue.pack_words) and the bundled
manifest's one-line description.
"""

from __future__ import annotations

from rest_framework import serializers

from registry_site.catalogue.pack_words import pack_words


class PackSerializer(serializers.Serializer):
    """Read-only; built from a pack id (`PackSerializer(source="pack_id")`)."""

    id = serializers.CharField(help_text="the pack id, as in `pack_id`")
    title = serializers.CharField(help_text='what the pack asks for, e.g. "Short, medium and long prompts"; '
                                            "the id itself for a pack the registry has no words for")
    kind = serializers.CharField(help_text='the kind of work, e.g. "Chat speed", "Coding: fix a failing test", '
                                           '"Long context"; "" for a pack the registry has no words for')
    description = serializers.CharField(help_text="the bundled pack manifest's one-line description; "
                                                  '"" for a pack that is not bundled')

    def to_representation(self, pack_id):
        words = pack_words(str(pack_id))
        return {"id": words.id, "title": words.title, "kind": words.kind, "description": words.description}
