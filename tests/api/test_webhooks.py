"""`/v1/webhooks` through the gateway: endpoints (create, list, read, update, rotate, delete), validation, the
delivery log a document's events leave behind, redelivery. Sending them is tests/integration/test_webhooks.py."""

from __future__ import annotations

import redis

from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import text_pages


def queued(api: Api, queue: str) -> int:
    """Messages waiting on a Celery queue in Redis (every priority level of it)."""
    client = redis.Redis.from_url(api.settings.resolved_redis_url())
    return sum(client.llen(key) for key in client.scan_iter(f"{queue}*") if client.type(key) == b"list")


def test_endpoints_crud_and_validation(api: Api) -> None:
    with api.client() as client:
        created = client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook", "events": ["document.succeeded"],
                                                    "description": "ops"})
        assert created.status_code == 201, created.text
        endpoint = created.json()
        assert endpoint["secret"].startswith("whsec_") and endpoint["events"] == ["document.succeeded"]
        assert endpoint["document_id"] is None and endpoint["description"] == "ops"
        assert [w["id"] for w in client.get("/v1/webhooks").json()["data"]] == [endpoint["id"]]
        read = client.get(f"/v1/webhooks/{endpoint['id']}").json()
        assert "secret" not in read and read["url"] == "https://8.8.8.8/hook"

        updated = client.patch(f"/v1/webhooks/{endpoint['id']}", json={"events": ["document.failed",
                                                                                  "document.failed"]}).json()
        assert updated["events"] == ["document.failed"] and updated["description"] == "ops"
        rotated = client.post(f"/v1/webhooks/{endpoint['id']}/rotate-secret").json()
        assert rotated["secret"].startswith("whsec_") and rotated["secret"] != endpoint["secret"]
        assert rotated["previous_secret_expires_at"]  # the previous secret signs too for 24 h by default
        again = client.post(f"/v1/webhooks/{endpoint['id']}/rotate-secret", json={"overlap_s": 0}).json()
        assert again["secret"] != rotated["secret"] and again["previous_secret_expires_at"] is None
        assert error_of(client.post(f"/v1/webhooks/{endpoint['id']}/rotate-secret", json={"overlap_s": -1})) == \
            (422, "validation_error")

        for body in ({"url": "https://8.8.8.8/hook", "events": ["nope"]}, {"url": ""}, {"url": "not a url"},
                     {"url": "https://8.8.8.8/hook", "colour": "red"}, {}):
            assert error_of(client.post("/v1/webhooks", json=body)) == (422, "validation_error"), body
        assert error_of(client.patch(f"/v1/webhooks/{endpoint['id']}", json={"events": ["nope"]})) == \
            (422, "validation_error")

        assert client.delete(f"/v1/webhooks/{endpoint['id']}").status_code == 204
        assert error_of(client.get(f"/v1/webhooks/{endpoint['id']}")) == (404, "not_found")
        assert error_of(client.delete(f"/v1/webhooks/{endpoint['id']}")) == (404, "not_found")
        assert client.get("/v1/webhooks").json()["data"] == []


def test_at_most_the_configured_number_of_endpoints(api_factory: ApiFactory) -> None:
    api = api_factory(webhooks={"max_endpoints_per_tenant": 2})
    with api.client() as client:
        for _ in range(2):
            assert client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook"}).status_code == 201
        assert error_of(client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook"})) == \
            (422, "validation_error")
        # a document's own webhook_url does not count against the limit
        response = client.post("/v1/documents", files={"file": ("a.pdf", text_pages(1))},
                               data={"webhook_url": "https://8.8.4.4/mine"})
        assert response.status_code == 202 and response.json()["webhook_id"]


def test_a_document_event_is_logged_pending_for_each_endpoint_and_can_be_redelivered(api: Api) -> None:
    with api.client() as client:
        every = client.post("/v1/webhooks", json={"url": "https://8.8.8.8/all"}).json()
        finals = client.post("/v1/webhooks", json={"url": "https://8.8.8.8/final",
                                                   "events": ["document.succeeded"]}).json()
    assert queued(api, "webhooks") == 0
    created = api.upload(text_pages(1), webhook_url="https://8.8.4.4/own")
    with api.client() as client:
        log = client.get(f"/v1/webhooks/{every['id']}/deliveries").json()
        assert log["next_cursor"] is None and len(log["data"]) == 1
        delivery = log["data"][0]
        assert (delivery["event_type"], delivery["status"], delivery["document_id"]) == \
            ("document.queued", "pending", created["id"])
        assert delivery["attempts"] == 0 and delivery["attempt_log"] == []
        assert client.get(f"/v1/webhooks/{finals['id']}/deliveries").json()["data"] == []  # not subscribed
        own = client.get(f"/v1/webhooks/{created['webhook_id']}/deliveries").json()["data"]
        assert [d["event_type"] for d in own] == ["document.queued"]
        # a document's own endpoint is signed with the tenant's secret: it has none of its own to rotate
        assert error_of(client.post(f"/v1/webhooks/{created['webhook_id']}/rotate-secret")) == \
            (422, "validation_error")
        # both deliveries were queued after the upload's commit, for the webhook workers
        assert queued(api, "webhooks") == 2

        again = client.post(f"/v1/webhooks/{every['id']}/deliveries/{delivery['id']}/redeliver")
        assert again.status_code == 202 and again.json()["status"] == "pending"
        assert queued(api, "webhooks") == 3
        assert error_of(client.post(f"/v1/webhooks/{every['id']}/deliveries/whd_missing/redeliver")) == \
            (404, "not_found")
        # a delivery is addressed through its own endpoint only
        assert error_of(client.post(f"/v1/webhooks/{finals['id']}/deliveries/{delivery['id']}/redeliver")) == \
            (404, "not_found")
