"""Hidden checks for fix-dashboard-order-count, evaluated in the candidate's sandboxed
process (Django set up there against an in-memory test database, after the shipped
tests ran in the same process) and judged by the verifier (verifykit.check_python).
Never copied into the workspace.

Multi-line orders (the regression), the page and its footer totals, the
shipped tests' cases, and month validation — a refactor that drops it
(`?month=2025-13` answering 200) is a realistic wrong fix.
"""

import re

from verifykit import Probe, Satisfies

# Django's ordinary test bootstrap, run before the shipped tests in the same process.
PRE = '''
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.test.utils import setup_test_environment
setup_test_environment()
from django.db import connection
connection.creation.create_test_db(verbosity=0, autoclobber=True)
'''

SETUP = '''
import datetime
from django.test import Client
from sales.models import Order, OrderLine, Region
from sales.reports import region_summary

def order(region, day, lines, status=Order.Status.PAID):
    o = Order.objects.create(region=region, placed_on=day, status=status)
    for quantity, price in lines:
        OrderLine.objects.create(order=o, product="part", quantity=quantity, unit_price_cents=price)
    return o

north, south, east, west = (Region.objects.create(name=n) for n in ("North", "South", "East", "West"))
# the shipped tests' month
order(north, datetime.date(2025, 3, 3), [(2, 1500)])
order(north, datetime.date(2025, 3, 20), [(1, 1000)])
order(south, datetime.date(2025, 3, 9), [(3, 700)])
order(south, datetime.date(2025, 3, 10), [(1, 1000)], status=Order.Status.CANCELLED)
order(north, datetime.date(2025, 4, 1), [(1, 1000)])
# multi-line orders
order(east, datetime.date(2024, 11, 2), [(1, 999), (2, 250), (5, 100)])
order(east, datetime.date(2024, 11, 30), [(1, 1)])
order(east, datetime.date(2024, 11, 15), [(4, 400), (1, 50)], status=Order.Status.CANCELLED)
order(west, datetime.date(2024, 11, 7), [(3, 333), (3, 333), (1, 1)])
order(west, datetime.date(2024, 12, 1), [(1, 5000)])
order(north, datetime.date(2024, 11, 8), [(2, 10)], status=Order.Status.PENDING)
order(south, datetime.date(2024, 12, 31), [(1, 10), (1, 20), (1, 30), (1, 40)])
order(south, datetime.date(2024, 12, 5), [(1, 7)])
client = Client()

def page(month):
    response = client.get("/dashboard/?month=" + month)
    return (response.status_code, response.content.decode())
'''


def row(region, orders, revenue):
    return {"region": region, "orders": orders, "revenue_cents": revenue, "average_order_cents": revenue // orders}


def page_with(region, orders, average, footer):
    """Status 200, the region's row and the footer totals as rendered."""

    def check(value):
        status, html = value
        found = re.search(rf'data-region="{region}">.*?class="orders">(\d+)<.*?class="average">(\d+)<', html, re.S)
        total = re.search(r'<tfoot>.*?class="orders">(\d+)<.*?class="revenue">(\d+)<.*?class="average">(\d+)<', html, re.S)
        return status == 200 and found and found.groups() == (orders, average) and total and total.groups() == footer

    return Satisfies(check, f"200 with {region} {orders} orders / average {average} and footer {footer}")


def status_is(code):
    return Satisfies(lambda value: value[0] == code, f"status {code}")


BAD_MONTHS = ("march", "2025-13", "2025-00", "2025-02-01", "abc-def", "-1-5", "2025-", "0-5")

PROBES = [
    # the shipped tests' cases
    Probe("march-summary", "region_summary(2025, 3)", [row("North", 2, 4000), row("South", 1, 2100)]),
    Probe("march-page", "page('2025-03')", Satisfies(lambda v: v[0] == 200 and "Sales 2025-03" in v[1] and 'data-region="North"' in v[1],
                                                     "200 with 'Sales 2025-03' and the North row")),  # fmt: skip
    Probe("bad-month-march", "page('march')[0]", 400),
    # orders with several lines are counted once
    Probe("november-summary", "region_summary(2024, 11)", [row("East", 2, 2000), row("West", 1, 1999)]),
    Probe("december-summary", "region_summary(2024, 12)", [row("South", 2, 107), row("West", 1, 5000)]),
    Probe("november-page-and-footer", "page('2024-11')", page_with("East", "2", "1000", ("3", "3999", "1333"))),
    Probe("december-page-and-footer", "page('2024-12')", page_with("South", "2", "53", ("3", "5107", "1702"))),
    Probe("month-without-paid-orders", "region_summary(2024, 10)", []),
    Probe("empty-month-page", "page('2024-10')", Satisfies(lambda v: v[0] == 200 and "No paid orders this month." in v[1],
                                                           "200 with 'No paid orders this month.'")),  # fmt: skip
    # month validation stays
    *[Probe(f"bad-month {m}", f"page({m!r})[0]", 400) for m in BAD_MONTHS],
    Probe("single-digit-month-is-fine", "page('2024-11')[0] == page('2024-011')[0] == 200", True),
]


def draw(rng):
    """Property-style probes drawn per execution from the verifier's secret seed.

    Distribution: 5 months (each its own year in 2031–2099, so draws never
    overlap the fixed data), 1–3 new regions named R<6 hex>, 1–6 orders per
    region with 1–5 lines (quantity 1–9, unit price 1–5000 cents) and status
    paid 70% / pending 15% / cancelled 15%. The expected rows come from the
    README's definition, computed here. Each probe also checks the **state**
    after the call by **identity**, not only by value: every row of every
    table of the sales app — primary key and all fields — is the same before
    and after (a "fix" that deletes an order's extra lines so a count comes
    out right fails here, and so does one that deletes rows and re-inserts
    equal copies under new keys), and the month's order lines are all there.

    Volumes are drawn too (long tail): usually 1–6 orders per region, but one
    month in four draws up to 40 orders with up to 12 lines each, and up to
    8 regions."""
    probes = []
    years = rng.sample(range(2031, 2100), 5)
    for index, year in enumerate(years):
        month = rng.randint(1, 12)
        heavy = rng.random() < 0.25  # the long tail: volumes are drawn too
        regions = sorted({"R" + "".join(rng.choice("0123456789abcdef") for _ in range(6))
                          for _ in range(rng.randint(1, 8 if heavy else 3))})  # fmt: skip
        lines_code, expected, line_rows = [], [], []
        for name in regions:
            lines_code.append(f"r = Region.objects.create(name={name!r})")
            paid_orders, revenue = 0, 0
            for _ in range(rng.randint(1, 40 if heavy else 6)):
                status = rng.choices(["PAID", "PENDING", "CANCELLED"], [70, 15, 15])[0]
                lines = [(rng.randint(1, 9), rng.randint(1, 5000)) for _ in range(rng.randint(1, 12 if heavy else 5))]
                day = rng.randint(1, 28)
                lines_code.append(f"order(r, datetime.date({year}, {month}, {day}), {lines!r}, status=Order.Status.{status})")
                line_rows += [(name, q, p) for q, p in lines]
                if status == "PAID":
                    paid_orders += 1
                    revenue += sum(q * p for q, p in lines)
            if paid_orders:
                expected.append(row(name, paid_orders, revenue))
        state = ("from django.apps import apps\n"
                 "def state():\n"
                 "    tables = sorted((m._meta.label, sorted(map(list, m.objects.order_by('pk').values_list())))\n"
                 "                    for m in apps.get_app_config('sales').get_models())\n"
                 f"    lines = sorted(OrderLine.objects.filter(order__placed_on__year={year}).values_list('order__region__name', 'quantity', 'unit_price_cents'))\n"
                 "    return tables, [list(x) for x in lines]\n")  # fmt: skip
        code = "\n".join([state, *lines_code, "before = state()", f"summary = region_summary({year}, {month})",
                          "after = state()", "result = (summary, before == after, after[1])"])  # fmt: skip
        probes.append(Probe(f"drawn-month-{index}", code, (expected, True, sorted([list(x) for x in line_rows]))))
    return probes
