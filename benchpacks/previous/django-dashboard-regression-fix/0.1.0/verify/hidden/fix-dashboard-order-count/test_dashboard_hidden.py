"""Hidden checks: multi-line orders, the page itself and the footer totals."""

import datetime
import re

from django.test import TestCase

from sales.models import Order, OrderLine, Region
from sales.reports import region_summary


def order(region, day, lines, status=Order.Status.PAID):
    o = Order.objects.create(region=region, placed_on=day, status=status)
    for quantity, price in lines:
        OrderLine.objects.create(order=o, product="part", quantity=quantity, unit_price_cents=price)
    return o


class HiddenDashboardTest(TestCase):
    @classmethod
    def setUpTestData(cls):
        east, west, north = (Region.objects.create(name=n) for n in ("East", "West", "North"))
        order(east, datetime.date(2024, 11, 2), [(1, 999), (2, 250), (5, 100)])  # 1999
        order(east, datetime.date(2024, 11, 30), [(1, 1)])  # 1
        order(east, datetime.date(2024, 11, 15), [(4, 400), (1, 50)], status=Order.Status.CANCELLED)
        order(west, datetime.date(2024, 11, 7), [(3, 333), (3, 333), (1, 1)])  # 1999
        order(west, datetime.date(2024, 12, 1), [(1, 5000)])
        order(north, datetime.date(2024, 11, 8), [(2, 10)], status=Order.Status.PENDING)

    def test_orders_are_counted_once_however_many_lines_they_have(self):
        self.assertEqual(
            region_summary(2024, 11),
            [
                {"region": "East", "orders": 2, "revenue_cents": 2000, "average_order_cents": 1000},
                {"region": "West", "orders": 1, "revenue_cents": 1999, "average_order_cents": 1999},
            ],
        )

    def test_the_page_and_its_totals(self):
        html = self.client.get("/dashboard/?month=2024-11").content.decode()
        east = re.search(r'data-region="East">.*?class="orders">(\d+)<.*?class="average">(\d+)<', html, re.S)
        self.assertEqual(east.groups(), ("2", "1000"))
        footer = re.search(r'<tfoot>.*?class="orders">(\d+)<.*?class="revenue">(\d+)<.*?class="average">(\d+)<', html, re.S)
        self.assertEqual(footer.groups(), ("3", "3999", "1333"))

    def test_a_month_without_paid_orders(self):
        self.assertEqual(region_summary(2024, 10), [])
        self.assertContains(self.client.get("/dashboard/?month=2024-10"), "No paid orders this month.")
