"""What every entity page (model, runtime, hardware) must do; each page's test file calls these."""

from __future__ import annotations

HIDDEN_MODEL = "mlx-community/Qwen2.5-0.5B-Instruct-4bit"


def check_index_and_page(client, index_url: str, page_url: str, expected: list[str]):
    index = client.get(index_url)
    assert index.status_code == 200
    assert page_url in index.content.decode()
    page = client.get(page_url)
    assert page.status_code == 200
    html = page.content.decode()
    for text in expected:
        assert text in html, text
    assert "Best system per pack" in html
    return html


def check_hidden(client, index_url: str, hidden_page_url: str):
    assert HIDDEN_MODEL not in client.get(index_url).content.decode()
    assert client.get(hidden_page_url).status_code == 404
