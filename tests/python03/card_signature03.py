"""The official A2A 0.3 Python client (a2a-sdk 0.3.x, signing extra) against a taskledger server
that signs its agent card: the SDK's signature verifier accepts the card a 0.3 client reads (the
merged card, fetched with no version, read as the 0.3 model), with the key from the JWKS the
signature's `jku` names, and refuses a changed one. a2a-sdk 0.3 canonicalizes its 0.3 model of
the card (0.3 members only, defaults and empty values left out), which no signature over the
1.0 card covers: the server signs that form too (README, "Security"). @a2a-js/sdk 0.3 has no
signature verifier.

Usage: python card_signature03.py BASE_URL
Prints one PASS/FAIL line per check and `N passed, M failed`; exits 1 if any check failed.
"""

from __future__ import annotations

import asyncio
import sys

import httpx
from a2a.client import A2ACardResolver
from a2a.utils.signing import create_signature_verifier
from jwt.api_jwk import PyJWK

passed = 0
failed = 0


def check(name: str, ok: bool, detail: str = '') -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f'PASS {name}', flush=True)
    else:
        failed += 1
        print(f'FAIL {name}' + (f': {detail}' if detail else ''), flush=True)


async def main(base: str) -> None:
    base = base.rstrip('/')
    jkus: list[str | None] = []

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        jkus.append(jku)
        jwks = httpx.get(jku or f'{base}/.well-known/jwks.json').json()
        return PyJWK(next(k for k in jwks['keys'] if k['kid'] == kid))

    verify = create_signature_verifier(key_provider, ['ES256'])
    async with httpx.AsyncClient(timeout=30.0) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        check('the 0.3 card carries signatures', bool(card.signatures))
        try:
            verify(card)
            check('the 0.3 verifier accepts the card', True)
        except Exception as e:  # noqa: BLE001
            check('the 0.3 verifier accepts the card', False, f'{type(e).__name__}: {e}')
        check(
            'the key comes from the JWKS the signature names',
            bool(jkus) and jkus[0] == f'{base}/.well-known/jwks.json',
            str(jkus),
        )
        changed = card.model_copy(update={'description': 'tampered'})
        try:
            verify(changed)
            check('a changed card does not verify', False)
        except Exception:  # noqa: BLE001
            check('a changed card does not verify', True)
    print(f'{passed} passed, {failed} failed')


if __name__ == '__main__':
    asyncio.run(main(sys.argv[1]))
    sys.exit(1 if failed else 0)
