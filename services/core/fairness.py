"""Fair share between tenants: the more pages a tenant already has in flight, the lower its queue priority.

A document's priority is fixed when it is accepted, from its tenant's pages in flight (its own included),
and every page job of the document carries it. Workers pop priority 0 before 3 before 6 before 9, so a
one-page upload of a quiet tenant overtakes the remaining pages of another tenant's 2,000-page upload,
while that upload still gets every worker nobody else needs. Within one step, pages run in order.
"""

from __future__ import annotations

from services.core.settings import Settings

# (pages in flight up to, priority): Redis serves 0 first.
PRIORITY_BANDS = ((50, 0), (500, 3), (5000, 6))
LOWEST_PRIORITY = 9


def priority_for(pages_in_flight: int, settings: Settings) -> int:
    if not settings.limits.fair_share:
        return 0
    for ceiling, priority in PRIORITY_BANDS:
        if pages_in_flight <= ceiling:
            return priority
    return LOWEST_PRIORITY
