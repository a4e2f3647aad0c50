"""FastAPI dependencies as `Annotated` aliases: settings, a database session, the object store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from services.core.db.session import get_sessionmaker
from services.core.settings import Settings
from services.core.storage import ObjectStore, get_store


def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_app_settings)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    session = get_sessionmaker(settings.resolved_database_url())()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session)]


def get_object_store(settings: SettingsDep) -> ObjectStore:
    return get_store(settings)


StoreDep = Annotated[ObjectStore, Depends(get_object_store)]
