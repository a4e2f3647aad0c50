"""Every state change of documents and pages, each one atomic, so any number of workers may race.

    document: queued ──split──▶ running ──last page ends──▶ (assembly claimed) ──▶ succeeded | partial | failed
              └──────────────── DELETE ───────────────────▶ cancelled     (final) ──retention──▶ expired_at set
    page:     pending ──split──▶ queued ──claim──▶ running ──▶ succeeded | failed
                                   ▲                  │ retryable error / lease expired
                                   └──────────────────┘
    At assembly a page whose stored result is missing ends failed (`fail_missing_pages`); a batch's documents
    are attached to it (`attach_to_batch`); erasure clears a row (`clear_customer_fields`, `mark_scrubbed`).

`pages` holds a page's changes (claims, leases, ends, retries), `documents` a document's own; callers import
from the package. `marks` holds the progress throttle's mark, the outbox's sent mark and the changes made to
rows a caller already holds (the reconciler's resends, a delete, an erasure); it imports only the models, and
`events` and `queues`, which `documents` and `pages` import, import it at call time.
"""

from services.core.lifecycle.documents import (
    attach_to_batch,
    cancel_document,
    claim_assembly,
    claim_page_numbers,
    clear_customer_fields,
    fail_missing_pages,
    final_status,
    finalize_document,
    mark_expired,
    mark_scrubbed,
    mark_split,
    mark_split_chunk,
)
from services.core.lifecycle.pages import (
    Claim,
    PageClaim,
    PageFinish,
    claim_page,
    claim_pages,
    extend_lease,
    finish_page,
    finish_pages,
    queue_split_pages,
    release_page,
    renew_leases,
    requeue_page,
    worker_identity,
)

__all__ = [
    "Claim",
    "PageClaim",
    "PageFinish",
    "attach_to_batch",
    "cancel_document",
    "claim_assembly",
    "claim_page",
    "claim_page_numbers",
    "claim_pages",
    "clear_customer_fields",
    "extend_lease",
    "fail_missing_pages",
    "final_status",
    "finalize_document",
    "finish_page",
    "finish_pages",
    "mark_expired",
    "mark_scrubbed",
    "mark_split",
    "mark_split_chunk",
    "queue_split_pages",
    "release_page",
    "renew_leases",
    "requeue_page",
    "worker_identity",
]
