"""The paraphrase recall sets: 30 facts, 30 questions in other words than their fact's,
unrelated questions, and the issue's targets; shared by tests/memory/test_paraphrase_recall.py
and its held-out companion tests/memory/test_paraphrase_heldout.py."""

from __future__ import annotations

FACTS = {
    "alice_diet": "Alice is vegetarian and allergic to peanuts",
    "sara_piano": "Sara has practised the piano every evening",
    "tom_flight": "Tom's flight to Berlin leaves at 7:40 on Tuesday morning",
    "wifi": "The office wifi password is taped under the router",
    "priya_school": "Priya's daughter starts kindergarten in September",
    "marco_car": "Marco drives an old red Fiat Panda",
    "dentist": "The dentist appointment was moved to next Thursday at 3 pm",
    "rent": "Our landlord raised the rent by 8 percent this year",
    "jonas_marathon": "Jonas is training for the Berlin marathon in October",
    "grandma": "Grandma's birthday is on the 14th of March",
    "lena_job": "Lena switched jobs and now works as a nurse at the city hospital",
    "tap": "The kitchen tap has been dripping since Sunday",
    "ben_train": "Ben is afraid of flying and always takes the train",
    "cat": "We adopted a grey cat named Pixel from the shelter",
    "nina_japanese": "Nina speaks fluent Japanese after living in Osaka for five years",
    "insurance": "The car insurance renewal is due at the end of the month",
    "david_wrist": "David broke his wrist skiing last winter",
    "book_club": "The book club meets on the first Monday of every month",
    "ravi_tea": "Ravi prefers tea over coffee, with no sugar",
    "anniversary": "Our wedding anniversary dinner is booked at Luigi's for Saturday",
    "emma_house": "Emma is saving money to buy a house next year",
    "spare_key": "The spare house key is hidden under the blue flowerpot",
    "carlos_food_bank": "Carlos volunteers at the food bank every Saturday",
    "printer": "The printer on the second floor is out of toner",
    "mia_python": "Mia is learning to code in Python on weekends",
    "report": "The quarterly report is due on Friday",
    "passport": "My passport expires in June next year",
    "offsite": "The team offsite will be held in a cabin near Lake Tahoe",
    "olivia": "Olivia got promoted to head of marketing",
    "gym": "I cancelled my gym membership in January",
}

QUESTIONS = [
    ("dietary restrictions", "alice_diet"),
    ("who plays a musical instrument", "sara_piano"),
    ("when does Tom travel to Germany?", "tom_flight"),
    ("how do I get on the internet at work?", "wifi"),
    ("when does Priya's child begin school?", "priya_school"),
    ("what vehicle does Marco own?", "marco_car"),
    ("when is my check-up for my teeth?", "dentist"),
    ("how much more do we pay for the apartment now?", "rent"),
    ("which running race is Jonas preparing for?", "jonas_marathon"),
    ("when should we celebrate our grandmother?", "grandma"),
    ("what is Lena's profession?", "lena_job"),
    ("is anything leaking in the house?", "tap"),
    ("who avoids airplanes?", "ben_train"),
    ("do we have any pets?", "cat"),
    ("which languages does Nina know?", "nina_japanese"),
    ("when must the auto coverage be paid?", "insurance"),
    ("has David ever been injured?", "david_wrist"),
    ("how often does the reading group get together?", "book_club"),
    ("how does Ravi take his hot drinks?", "ravi_tea"),
    ("which restaurant did we reserve to celebrate being married?", "anniversary"),
    ("who is planning to purchase a home?", "emma_house"),
    ("how can I get in if I'm locked out?", "spare_key"),
    ("who does charity work at weekends?", "carlos_food_bank"),
    ("why can't I make copies upstairs?", "printer"),
    ("who is studying programming?", "mia_python"),
    ("when is the deadline for the three-month summary?", "report"),
    ("when do I need new travel documents?", "passport"),
    ("where is the company retreat?", "offsite"),
    ("what is Olivia's new role?", "olivia"),
    ("do I still pay for fitness classes?", "gym"),
]

UNRELATED = [
    "what is the capital of Peru?",
    "how do volcanoes form?",
    "who won the football world cup in 2010?",
    "what is the boiling point of mercury?",
    "how many moons does Jupiter have?",
    "how do I convert Celsius to Fahrenheit?",
]

TARGETS = {"top3": 0.92, "first": 0.85, "unrelated_empty": 3 / 5}
"""The issue's targets (issue 26, "Done when")."""
