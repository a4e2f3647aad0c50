"""FastAPI dependencies as `Annotated` aliases: settings, a database session, the object store, the caller."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

import redis
from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from services.core.db.models import Tenant
from services.core.db.session import session_scope
from services.core.errors import Forbidden, Unauthorized, ValidationFailed
from services.core.key_cache import RECENT_KEYS
from services.core.settings import Settings
from services.core.storage import ObjectStore, get_store
from services.core.tenants import authenticate, hash_key
from services.gateway.documents.feeds import FeedHub
from services.gateway.documents.key_watch import KeyWatch
from services.gateway.ratelimit import RateLimiter


async def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]


def public_link(request: Request, settings: Settings, name: str, **params: str) -> str:
    """An absolute link to a route, on `PAGEMILL_PUBLIC_URL` when set, else on the address the request came to."""
    if settings.public_url:
        return settings.public_url.rstrip("/") + str(request.app.url_path_for(name, **params))
    return str(request.url_for(name, **params))


def declared_query(route: APIRoute) -> frozenset[str]:
    """The query parameters a route (with its dependencies) reads: a walk of a few nodes, made per request
    (an `APIRoute` is unhashable, so not cached by route)."""
    names: set[str] = set()
    pending = [route.dependant]
    while pending:
        dependant = pending.pop()
        names |= {param.alias for param in dependant.query_params}
        pending.extend(dependant.dependencies)
    return frozenset(names)


async def check_query(request: Request) -> None:
    """Every documented route takes only the query parameters it declares, each once (STYLE.md: inputs forbid
    extra fields): a misspelt `wiat=30` is refused, not ignored, and `limit=1&limit=2` is not read as one of them.
    Routes outside the schema (`/metrics`, the docs' OAuth redirect) take what their clients send."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not route.include_in_schema:
        return
    names = [name for name, _ in request.query_params.multi_items()]
    allowed = declared_query(route)
    if unknown := sorted(set(names) - allowed):
        takes = f"it takes {', '.join(sorted(allowed))}" if allowed else "it takes none"
        raise ValidationFailed(f"{', '.join(unknown)}: unknown query parameter for this route; {takes}")
    if twice := sorted({name for name in names if names.count(name) > 1}):
        raise ValidationFailed(f"{', '.join(twice)}: given more than once")


def get_session(settings: SettingsDep) -> Iterator[Session]:
    """One transaction per request: committed when the route returns, rolled back when it raises."""
    with session_scope(settings.resolved_database_url()) as session:
        yield session


# scope="function": committed before the answer goes out. FastAPI's default ("request") ends the dependency after
# the response: a client could hold its 201 before the commit (and its next request not see the write), and a
# commit that failed cut the connection instead of answering 500.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]


async def get_object_store(request: Request, settings: SettingsDep) -> ObjectStore:
    """The app's store, built once in a thread (an S3 client is costly to build and may create its bucket)."""
    store: ObjectStore | None = getattr(request.app.state, "store", None)
    if store is None:
        store = request.app.state.store = await run_in_threadpool(get_store, settings)
    return store


StoreDep = Annotated[ObjectStore, Depends(get_object_store)]

_api_key = HTTPBearer(auto_error=False, scheme_name="ApiKey", description="a tenant's API key (pm_...)")
_admin_key = HTTPBearer(auto_error=False, scheme_name="AdminKey", description="PAGEMILL_ADMIN_KEY")
BearerCredentials = HTTPAuthorizationCredentials | None


async def get_current_tenant(request: Request, settings: SettingsDep,
                             credentials: Annotated[BearerCredentials, Depends(_api_key)]) -> Tenant:
    """The caller's tenant: from the keys this process found live in the last `api_key_cache_s` (no database,
    no thread), else looked up (services/core/key_cache.py says how revocation stays exact)."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("an API key is required: Authorization: Bearer <key>")
    api_key = credentials.credentials.strip()
    tenant = RECENT_KEYS.get(hash_key(api_key)) if settings.api_key_cache_s > 0 else None
    if tenant is None:
        tenant = await run_in_threadpool(_checked_key, settings, api_key)
    if tenant is None:
        raise Unauthorized("the API key is unknown or has been revoked")
    request.state.tenant_id = tenant.id
    request.state.api_key = api_key  # an event stream re-checks it while open
    return tenant


def _checked_key(settings: Settings, api_key: str) -> Tenant | None:
    generation = RECENT_KEYS.generation  # read first: a change committed during the lookup drops its answer
    with session_scope(settings.resolved_database_url()) as session:
        tenant = authenticate(session, api_key)
    if tenant is not None:
        RECENT_KEYS.put(hash_key(api_key), tenant, settings.api_key_cache_s, generation)
    return tenant


def tenant_of_key(database_url: str, api_key: str) -> str | None:
    """The id of the live tenant an API key belongs to now (None: revoked, unknown, the tenant disabled)."""
    with session_scope(database_url) as session:
        tenant = authenticate(session, api_key)
        return tenant.id if tenant is not None else None


CurrentTenant = Annotated[Tenant, Depends(get_current_tenant)]


def require_admin(settings: SettingsDep, credentials: Annotated[BearerCredentials, Depends(_admin_key)]) -> None:
    if settings.admin_key is None or not settings.admin_key.get_secret_value():
        raise Forbidden("the admin API is off; set PAGEMILL_ADMIN_KEY to turn it on")
    given = credentials.credentials.strip() if credentials else ""
    if not hmac.compare_digest(given.encode(), settings.admin_key.get_secret_value().encode()):
        if given.startswith("pm_"):
            with session_scope(settings.resolved_database_url()) as session:
                if authenticate(session, given) is not None:
                    raise Forbidden("this is a tenant's API key; the admin API needs PAGEMILL_ADMIN_KEY")
        raise Unauthorized("the admin key is missing or wrong")


AdminDep = Annotated[None, Depends(require_admin)]


async def get_redis(request: Request, settings: SettingsDep) -> redis.Redis:
    client: redis.Redis | None = getattr(request.app.state, "redis", None)
    if client is None:
        client = redis.Redis.from_url(settings.resolved_redis_url(), socket_timeout=5)
        request.app.state.redis = client
    return client


RedisDep = Annotated[redis.Redis, Depends(get_redis)]


async def get_rate_limiter(request: Request, client: RedisDep) -> RateLimiter:
    limiter: RateLimiter | None = getattr(request.app.state, "rate_limiter", None)
    if limiter is None:
        limiter = request.app.state.rate_limiter = RateLimiter(client)
    return limiter


RateLimiterDep = Annotated[RateLimiter, Depends(get_rate_limiter)]


async def get_feeds(request: Request, settings: SettingsDep) -> FeedHub:
    """The process's document feeds (one Redis subscription for every event stream and long-poll)."""
    hub: FeedHub | None = getattr(request.app.state, "feeds", None)
    if hub is None:
        hub = request.app.state.feeds = FeedHub(settings.resolved_database_url(), settings.redis_url,
                                                recheck_s=settings.events.recheck_s)
    return hub


FeedsDep = Annotated[FeedHub, Depends(get_feeds)]


async def get_key_watch(request: Request, settings: SettingsDep) -> KeyWatch:
    """The process's re-check of its open event streams' API keys (one read per round for all of them)."""
    watch: KeyWatch | None = getattr(request.app.state, "key_watch", None)
    if watch is None:
        watch = request.app.state.key_watch = KeyWatch(settings.resolved_database_url())
    return watch


KeyWatchDep = Annotated[KeyWatch, Depends(get_key_watch)]
