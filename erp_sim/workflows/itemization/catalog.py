"""The expense catalog: categories, subcategories and how receipts word each subcategory.

Categories fall into three structural families (our own definition, see docs/simulator.md):
- ``lodging``: per-night recurring charges plus incidentals (Hotel);
- ``transport``: a base charge with stacked fees and taxes (CarRental, Airfare);
- ``itemized_bill``: a bill of distinct items with tax, tip or fees on top (Meals, Conference).
Receipts never print subcategory names: they print vendor wording (``RECEIPT_WORDING``), and
the agent maps wording to subcategory the way the study's system prompt taught GPT-5 to
("Hotel tax" -> Room tax; "Room service and dining" -> Room service).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from erp_sim.workflows import Cell, Rows


class CategorySpec(BaseModel):
    category_id: str = Field(description="D365 cost type id, e.g. 'Hotel'.")
    name: str = Field(description="Display name.")
    family: str = Field(description="Structural family: lodging, transport, itemized_bill or simple.")
    itemize: bool = Field(description="Whether lines of this category must be itemized.")
    subcategories: list[str] = Field(default_factory=list, description="Valid subcategory names.")


CATEGORIES: dict[str, CategorySpec] = {
    spec.category_id: spec
    for spec in [
        CategorySpec(
            category_id="Hotel",
            name="Hotel",
            family="lodging",
            itemize=True,
            subcategories=[
                "Daily room rate",
                "Room tax",
                "City tax",
                "Resort fee",
                "Breakfast",
                "Room service",
                "Parking",
                "Internet",
                "Telephone",
                "Laundry",
                "Minibar",
            ],
        ),
        CategorySpec(
            category_id="CarRental",
            name="Car rental",
            family="transport",
            itemize=True,
            subcategories=[
                "Base rate",
                "Rental tax",
                "Airport concession fee",
                "Vehicle license fee",
                "Fuel",
                "Collision damage waiver",
                "GPS rental",
                "Additional driver",
            ],
        ),
        CategorySpec(
            category_id="Airfare",
            name="Airfare",
            family="transport",
            itemize=True,
            subcategories=[
                "Base fare",
                "Fuel surcharge",
                "Passenger facility charge",
                "Security fee",
                "Government tax",
                "Seat selection",
                "Checked baggage",
                "Change fee",
            ],
        ),
        CategorySpec(
            category_id="Meals",
            name="Meals",
            family="itemized_bill",
            itemize=True,
            subcategories=["Food", "Beverages", "Alcohol", "Sales tax", "Tip", "Service charge"],
        ),
        CategorySpec(
            category_id="Conference",
            name="Conference",
            family="itemized_bill",
            itemize=True,
            subcategories=[
                "Registration fee",
                "Workshop fee",
                "Course materials",
                "Networking event",
                "Sales tax",
                "Processing fee",
            ],
        ),
        CategorySpec(category_id="Taxi", name="Taxi", family="simple", itemize=False),
        CategorySpec(category_id="Mileage", name="Mileage", family="simple", itemize=False),
        CategorySpec(category_id="Supplies", name="Office supplies", family="simple", itemize=False),
    ]
}

EXPENSE_TYPES = ["Hotel", "CarRental", "Airfare", "Meals", "Conference"]

# Vendor wording on receipts -> subcategory. Several wordings per subcategory, as real folios vary.
RECEIPT_WORDING: dict[str, dict[str, list[str]]] = {
    "Hotel": {
        "Daily room rate": ["Room charge", "Accommodation", "Guest room"],
        "Room tax": ["Occupancy tax", "Hotel tax", "State lodging tax"],
        "City tax": ["City tax", "Tourism levy", "Municipal tax"],
        "Resort fee": ["Resort fee", "Destination fee"],
        "Breakfast": ["Breakfast buffet", "Continental breakfast"],
        "Room service": ["In-room dining", "Room service and dining"],
        "Parking": ["Valet parking", "Self parking"],
        "Internet": ["High-speed internet", "Wi-Fi premium"],
        "Telephone": ["Long distance call", "Telephone"],
        "Laundry": ["Laundry service", "Dry cleaning"],
        "Minibar": ["Minibar", "Honor bar"],
    },
    "CarRental": {
        "Base rate": ["Time and mileage", "Daily rental rate"],
        "Rental tax": ["Sales tax", "State rental surcharge"],
        "Airport concession fee": ["Concession recovery fee", "Airport access fee"],
        "Vehicle license fee": ["Vehicle license recovery", "Vehicle registration fee"],
        "Fuel": ["Fuel service option", "Refueling charge"],
        "Collision damage waiver": ["Loss damage waiver", "CDW coverage"],
        "GPS rental": ["Navigation unit", "GPS device"],
        "Additional driver": ["Additional authorized driver", "Extra driver fee"],
    },
    "Airfare": {
        "Base fare": ["Air transportation charge", "Base fare"],
        "Fuel surcharge": ["Carrier-imposed surcharge", "Fuel surcharge (YQ)"],
        "Passenger facility charge": ["Passenger facility charge (XF)", "Airport facility charge"],
        "Security fee": ["September 11th security fee (AY)", "Aviation security fee"],
        "Government tax": ["US transportation tax (US)", "Segment tax (ZP)"],
        "Seat selection": ["Preferred seat", "Seat assignment fee"],
        "Checked baggage": ["First checked bag", "Excess baggage"],
        "Change fee": ["Itinerary change fee", "Reissue fee"],
    },
    "Meals": {
        "Food": ["Entree", "Appetizer", "Dessert", "Main course"],
        "Beverages": ["Soft drink", "Coffee", "Sparkling water"],
        "Alcohol": ["House wine", "Draft beer", "Cocktail"],
        "Sales tax": ["Sales tax", "Meal tax"],
        "Tip": ["Gratuity", "Tip"],
        "Service charge": ["Service charge", "Large party service fee"],
    },
    "Conference": {
        "Registration fee": ["Full conference pass", "Registration"],
        "Workshop fee": ["Pre-conference workshop", "Hands-on lab session"],
        "Course materials": ["Proceedings and materials", "Printed course binder"],
        "Networking event": ["Networking reception", "Gala dinner ticket"],
        "Sales tax": ["Sales tax", "VAT"],
        "Processing fee": ["Payment processing fee", "Booking fee"],
    },
}


def wording_to_subcategory(category_id: str) -> dict[str, str]:
    """The mapping rule table for one category: receipt wording -> subcategory."""
    return {word: sub for sub, words in RECEIPT_WORDING[category_id].items() for word in words}


def mapping_rules_text(category_id: str) -> str:
    """The mapping table as the lines a system prompt or the user shows the agent."""
    return "\n".join(
        f"- {', '.join(repr(w) for w in words)} -> {sub}" for sub, words in RECEIPT_WORDING[category_id].items()
    )


COMPANY: dict[str, Cell] = {"id": 1, "data_area_id": "USMF", "name": "Contoso Entertainment System USA"}


def shared_rows() -> Rows:
    """The rows every task shares: the company, the categories and their subcategories."""
    categories: list[dict[str, Cell]] = [
        {"id": n, "category_id": spec.category_id, "name": spec.name, "itemize": spec.itemize}
        for n, spec in enumerate(CATEGORIES.values(), start=1)
    ]
    subcategories: list[dict[str, Cell]] = [
        {"category_id": spec.category_id, "name": sub} for spec in CATEGORIES.values() for sub in spec.subcategories
    ]
    return {
        "company": [dict(COMPANY)],
        "expense_category": categories,
        "expense_subcategory": [{"id": n, **row} for n, row in enumerate(subcategories, start=1)],
    }
