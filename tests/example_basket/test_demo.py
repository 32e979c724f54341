"""``python -m example_basket demo`` runs and shows each step, refusals included."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from .support import ROOT, START_NEW, unknown

TOOLS = (
    "search_catalog, create_basket, add_item, remove_item, get_basket, list_baskets, "
    "checkout, close_basket"
)


def test_the_demo_walks_through_the_lifecycle_and_its_refusals() -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(
        [sys.executable, "-m", "example_basket", "demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line]
    assert not [line for line in lines if " INFO " in line], "server logs belong on stderr"

    created = [json.loads(line[2:]) for line in lines if line.startswith('← {"basket_id"')]
    waiting = next(i for i, line in enumerate(lines) if line.startswith("# Baskets expire after"))
    basket_id = created[0]["basket_id"]
    idle_id = json.loads(lines[waiting + 2][2:])["basket_id"]  # the answer to create_basket
    mistyped = next(
        m.group(1)
        for line in lines
        if (m := re.fullmatch(r"← isError: Unknown basket '(.*?)'.*", line))
    )
    assert mistyped != basket_id and mistyped[:-2] == basket_id[:-2]
    order = next(json.loads(line[2:]) for line in lines if line.startswith('← {"order_id"'))
    assert re.fullmatch(r"ord_[0-9a-f]{12}", order["order_id"])
    checked_out = re.compile(
        rf"← isError: Basket '{basket_id}' was checked out at "
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ and can no longer be used\. {START_NEW}"
    )

    expected: list[str | re.Pattern[str]] = [
        f"# The server offers 8 tools: {TOOLS}",
        '→ search_catalog {"query": "mug", "limit": 3}',
        "← isError: Unknown SKU 'MUG-99'. Call search_catalog to find a product's SKU.",
        "← isError: Input validation error in add_item: quantity: must be at most 99, got 500.",
        f"← isError: {unknown(mistyped)}",
        f'→ checkout {{"basket_id": "{basket_id}"}}',
        "← isError: Checkout is irreversible: the order total is 39.80 EUR. Ask the user, "
        "then call checkout again with confirm: true.",
        f'→ checkout {{"basket_id": "{basket_id}", "confirm": true}}',
        "← "
        + json.dumps(
            {
                "order_id": order["order_id"],
                "basket_id": basket_id,
                "items": [
                    {"sku": "MUG-24", "name": "Travel mug", "quantity": 2, "unit_price": 19.9}
                ],
                "total": 39.8,
            }
        ),
        f'→ get_basket {{"basket_id": "{basket_id}"}}',
        checked_out,
        "→ create_basket {}",
        f'→ add_item {{"basket_id": "{idle_id}", "sku": "MUG-24"}}',
        f"← isError: Basket '{idle_id}' has expired; the exact time is not known (baskets "
        f"expire after 2 seconds without use and 24 hours after creation). {START_NEW}",
        "Done. Every refusal above is what the model sees: what went wrong and what to call.",
    ]
    position = 0
    for want in expected:
        found = next(
            (
                i
                for i in range(position, len(lines))
                if (want.fullmatch(lines[i]) if isinstance(want, re.Pattern) else lines[i] == want)
            ),
            None,
        )
        assert found is not None, f"missing, or out of order: {want}\n\n{done.stdout}"
        position = found + 1
    assert position == len(lines)
