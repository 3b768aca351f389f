from accounts.models import ApiToken


def test_it_shows_a_new_token_once(client, submitter):
    client.force_login(submitter)
    page = client.post("/accounts/tokens/", {"name": "laptop"}).content.decode()
    token = ApiToken.objects.get(user=submitter)
    assert f'<code id="new-token">{token.prefix}' in page
    again = client.get("/accounts/tokens/").content.decode()
    assert 'id="new-token"' not in again


def test_it_revokes_only_your_own_tokens(client, submitter, make_user):
    other = make_user("bob@example.org")
    theirs, _ = ApiToken.issue(other, "bob")
    client.force_login(submitter)
    assert client.post(f"/accounts/tokens/{theirs.pk}/revoke/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
