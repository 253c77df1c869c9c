"""Finding things on the inbox page the way a person does: by role, label and text."""

from __future__ import annotations

from playwright.sync_api import Locator, Page


def bundle_card(page: Page, pending_id: str) -> Locator:
    return page.locator(f'article[data-pending-id="{pending_id}"]')


def session_cards(page: Page, session_id: str) -> Locator:
    return page.locator(f'[data-session-id="{session_id}"] article')


def question_group(card: Locator, prompt: str) -> Locator:
    """The fieldset of one question, by its prompt (the group's accessible name)."""
    return card.get_by_role("group", name=prompt)


def status_region(page: Page) -> Locator:
    return page.get_by_role("status")
