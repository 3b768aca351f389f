"""allauth's pages render inside the site layout with the site's own styles."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"])
def test_auth_pages_use_the_site_layout(client, url):
    html = client.get(url).content.decode()
    assert '<a class="brand" href="/">Benchpack registry</a>' in html
    assert "/static/benchpack/site.css" in html and '<main class="auth">' in html
    assert 'class="button"' in html  # allauth's buttons drawn as the site's
    assert "style=" not in html
