"""A request's transaction is committed before its answer is sent: a client never holds a 201 for a write that
is not visible yet, or for one whose commit then failed. On a real gateway process and real PostgreSQL, whose
deferred constraint trigger fails chosen commits at COMMIT time (after the route has returned)."""

from __future__ import annotations

import sqlalchemy as sa

from tests.conftest import PlatformFactory

FAIL_AT_COMMIT = """
CREATE FUNCTION fail_doomed_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF left(NEW.name, 7) = 'doomed-' THEN RAISE EXCEPTION 'refused at commit'; END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER doomed_tenant AFTER INSERT ON tenants DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION fail_doomed_tenant();
"""


def test_a_commit_that_fails_is_not_answered_as_a_success(platform_factory: PlatformFactory,
                                                          postgres_url: str) -> None:
    platform = platform_factory(postgres_url, engine="fake").start(worker=False)
    engine = sa.create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as connection:
        connection.exec_driver_sql(FAIL_AT_COMMIT)
    engine.dispose()
    platform.expect_log_errors("refused at commit")
    with platform.admin() as admin:
        refused = admin.post("/v1/admin/tenants", json={"name": "doomed-1"})
        listed = {tenant["name"] for tenant in admin.get("/v1/admin/tenants").json()}
        # the answer came after the commit: a 500 with the error envelope, not the 201 of a tenant that never was
        assert refused.status_code == 500 and refused.json()["error"]["code"] == "internal_error", refused.text
        assert "doomed-1" not in listed

        # and a write that is answered is there for the very next request, on any connection
        for i in range(20):
            made = admin.post("/v1/admin/tenants", json={"name": f"kept-{i}"})
            assert made.status_code == 201, made.text
            key = admin.post(f"/v1/admin/tenants/{made.json()['id']}/keys", json={"name": "k"})
            assert key.status_code == 201, key.text
