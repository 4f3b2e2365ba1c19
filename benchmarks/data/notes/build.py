"""Writes `notes.jsonl` and `questions.jsonl`: independent notes and paraphrased questions.

The evaluation data of `benchmarks/notes.py`, written for this project (nothing
downloaded). Two kinds of source below:

- hand-written notes, each with the questions it answers, phrased as a person
  would ask them (other words than the note's where natural: "plane" for
  "flight", "Portugal" for "Lisbon", "bill" for "invoice");
- families that share an entity by design, so that words point at the wrong
  note: every company has an invoice, a contract note and a contact note; every
  colleague has a birthday, a diet and a way to be reached. A question names
  the company or the person (a keyword hit on three notes) and only its meaning
  says which of the three answers it.

Keys are neutral (`n001` ...) so that no key word helps keyword search. The
order of the notes is shuffled with a fixed seed (the order a person adds
notes in is not grouped by topic); the files are deterministic.

    python benchmarks/data/notes/build.py      # rewrites the two .jsonl files
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 16

# (topic, note text, [questions answered by this note alone])
Item = tuple[str, str, list[str]]

# -- companies: invoice, contract, contact -------------------------------------------------

COMPANIES = [
    # name, invoice no., amount, paid?, date, contract, contact, role, email
    (
        "Globex",
        "INV-2041",
        "$4,200",
        True,
        "March 3",
        "renewed the support contract for two more years",
        "Hank Scorpio",
        "account manager",
        "hank@globex.example",
    ),
    (
        "Initech",
        "INV-2042",
        "$1,150",
        False,
        "April 30",
        "renewed their support contract through 2026",
        "Bill Lumbergh",
        "procurement lead",
        "bill.l@initech.example",
    ),
    (
        "Umbrella",
        "INV-1987",
        "$12,800",
        True,
        "January 19",
        "cancelled their subscription at the end of February, citing price",
        "Alice Abernathy",
        "operations director",
        "alice@umbrella.example",
    ),
    (
        "Hooli",
        "INV-2110",
        "$7,340",
        False,
        "May 15",
        "moved from the monthly plan to an annual plan",
        "Gavin Belson",
        "VP of partnerships",
        "gavin@hooli.example",
    ),
    (
        "Stark Industries",
        "INV-2077",
        "$22,500",
        True,
        "February 8",
        "signed a three-year enterprise agreement",
        "Pepper Potts",
        "chief operating officer",
        "pepper@stark.example",
    ),
    (
        "Wayne Enterprises",
        "INV-2093",
        "$3,980",
        False,
        "June 1",
        "are evaluating a competitor and may not renew in the autumn",
        "Lucius Fox",
        "head of R&D",
        "lfox@wayne.example",
    ),
    (
        "Acme",
        "INV-2015",
        "$640",
        True,
        "December 12",
        "downgraded to the basic tier to save money",
        "Wile Coyote",
        "office manager",
        "wile@acme.example",
    ),
    (
        "Soylent",
        "INV-2130",
        "$9,100",
        False,
        "July 7",
        "asked for a custom SLA with four-hour response times",
        "Sol Roth",
        "IT manager",
        "sol@soylent.example",
    ),
    (
        "Vandelay Industries",
        "INV-2066",
        "$2,275",
        True,
        "April 2",
        "added forty more seats to their licence",
        "Art Vandelay",
        "founder",
        "art@vandelay.example",
    ),
    (
        "Cyberdyne",
        "INV-2101",
        "$15,600",
        False,
        "May 28",
        "put their renewal on hold pending a security audit",
        "Miles Dyson",
        "engineering director",
        "miles@cyberdyne.example",
    ),
    (
        "Tyrell",
        "INV-2088",
        "$5,450",
        True,
        "March 21",
        "renewed for one year at a ten percent discount",
        "Rachael Rosen",
        "executive assistant",
        "rachael@tyrell.example",
    ),
    (
        "Wonka",
        "INV-2054",
        "$830",
        True,
        "February 27",
        "signed up for the pilot programme in January",
        "Charlie Bucket",
        "operations trainee",
        "charlie@wonka.example",
    ),
    (
        "Pied Piper",
        "INV-2119",
        "$1,990",
        False,
        "June 14",
        "want to pay quarterly instead of monthly from now on",
        "Jared Dunn",
        "head of business development",
        "jared@piedpiper.example",
    ),
    (
        "Massive Dynamic",
        "INV-2072",
        "$18,250",
        True,
        "March 9",
        "extended the contract but dropped the on-site training",
        "Nina Sharp",
        "chief executive",
        "nina@massive.example",
    ),
    (
        "Oscorp",
        "INV-2140",
        "$6,700",
        False,
        "July 22",
        "terminated the agreement after the data breach",
        "Norman Osborn",
        "chairman",
        "norman@oscorp.example",
    ),
    (
        "Aperture",
        "INV-2083",
        "$4,860",
        True,
        "March 15",
        "renewed automatically; nobody on their side objected",
        "Cave Johnson",
        "founder and CEO",
        "cave@aperture.example",
    ),
    (
        "Dunder Mifflin",
        "INV-2029",
        "$410",
        True,
        "January 5",
        "switched the billing contact after their reorganisation",
        "Pam Beesly",
        "office administrator",
        "pam@dundermifflin.example",
    ),
    (
        "Gringotts",
        "INV-2097",
        "$31,000",
        False,
        "June 30",
        "negotiated a five-year deal with a price freeze",
        "Griphook",
        "head of accounts",
        "griphook@gringotts.example",
    ),
    (
        "Monsters Inc",
        "INV-2061",
        "$2,940",
        True,
        "March 30",
        "reduced their contract to the scare-floor team only",
        "Roz",
        "records clerk",
        "roz@monsters.example",
    ),
    (
        "Nakatomi",
        "INV-2125",
        "$11,200",
        False,
        "June 21",
        "are threatening to cancel over the outage in March",
        "Harry Ellis",
        "deal maker",
        "ellis@nakatomi.example",
    ),
    (
        "Weyland-Yutani",
        "INV-2133",
        "$26,400",
        True,
        "April 11",
        "doubled their usage after the merger and want volume pricing",
        "Carter Burke",
        "special projects lead",
        "burke@weyland.example",
    ),
    (
        "Bluth Company",
        "INV-2048",
        "$1,720",
        False,
        "May 3",
        "asked to pause the account for three months while they restructure",
        "Michael Bluth",
        "president",
        "michael@bluth.example",
    ),
    (
        "Krusty Krab",
        "INV-2036",
        "$385",
        True,
        "January 26",
        "only renew month to month, the owner refuses long commitments",
        "Eugene Krabs",
        "owner",
        "krabs@krustykrab.example",
    ),
    (
        "Sirius Cybernetics",
        "INV-2107",
        "$8,900",
        False,
        "June 8",
        "escalated a complaint about the API and want a service credit",
        "Marvin Android",
        "customer complaints",
        "marvin@sirius.example",
    ),
    (
        "Duff Brewery",
        "INV-2145",
        "$3,150",
        True,
        "May 19",
        "signed a new two-year deal including the analytics add-on",
        "Duffman",
        "marketing manager",
        "duffman@duff.example",
    ),
]


def company_items() -> list[Item]:
    items: list[Item] = []
    for name, number, amount, paid, date, contract, contact, role, email in COMPANIES:
        if paid:
            invoice = (
                f"Invoice {number} from {name} for {amount} was paid by bank transfer on {date}."
            )
            invoice_qs = [
                f"Did we settle what {name} billed us?",
                f"How much was the last {name} bill and when did it go out?",
            ]
        else:
            invoice = f"{name} invoice {number} for {amount} is still unpaid; it is due on {date}."
            invoice_qs = [
                f"Do we still owe {name} money?",
                f"By when do we have to pay {name}?",
            ]
        items.append(("invoice", invoice, invoice_qs))
        items.append(
            (
                "contract",
                f"{name} {contract}.",
                [f"What's happening with the {name} account, are they staying with us?"],
            )
        )
        items.append(
            (
                "contact",
                f"Our contact at {name} is {contact}, {role} ({email}).",
                [f"Who should I get in touch with over at {name}?"],
            )
        )
    return items


# -- colleagues and friends: birthday, diet, how to reach them ------------------------------

PEOPLE = [
    # name, birthday, diet, reach
    (
        "Maria",
        "April 14",
        "is vegetarian and does not eat fish either",
        "prefers a phone call to email for anything urgent",
    ),
    ("Tom", "November 2", "is allergic to peanuts and tree nuts", "only reads Slack, never email"),
    (
        "Aisha",
        "July 23",
        "does not eat pork and avoids alcohol",
        "likes a text message before any call",
    ),
    (
        "Kenji",
        "January 30",
        "is lactose intolerant; oat milk is fine",
        "answers email in the mornings only, Tokyo time",
    ),
    ("Sofia", "September 9", "is vegan", "wants meeting invites, not ad-hoc calls"),
    (
        "Lukas",
        "March 17",
        "has coeliac disease, so strictly gluten-free",
        "is easiest to reach on WhatsApp",
    ),
    ("Priya", "December 5", "is allergic to shellfish", "does not take calls before 10am"),
    (
        "Olivier",
        "June 11",
        "eats everything but hates coriander",
        "prefers long emails to meetings",
    ),
    (
        "Grace",
        "August 28",
        "follows a low-FODMAP diet: no onion or garlic",
        "is on Signal, not WhatsApp",
    ),
    ("Mateo", "October 19", "is pescatarian", "wants voice notes rather than long texts"),
    ("Hannah", "February 21", "cannot have sesame", "checks LinkedIn messages more than email"),
    ("Dmitri", "May 6", "does not drink coffee, only green tea", "turns his phone off at weekends"),
    (
        "Chloe",
        "July 2",
        "is diabetic and avoids sugary desserts",
        "prefers the shared calendar for anything scheduled",
    ),
    ("Yusuf", "November 27", "eats halal only", "replies fastest on Microsoft Teams"),
    ("Ingrid", "January 8", "is allergic to eggs", "wants a written agenda before any call"),
    ("Rafael", "April 3", "is on a keto diet this year", "asks to be phoned, he never reads chat"),
    (
        "Noah",
        "October 4",
        "cannot eat mushrooms, they make him ill",
        "is only online in the afternoons, he works nights",
    ),
    (
        "Elif",
        "March 29",
        "does not eat red meat",
        "wants everything in one email thread, not scattered messages",
    ),
    (
        "Arjun",
        "August 15",
        "is a strict vegetarian, no eggs either",
        "is reachable on his desk phone, extension 4417",
    ),
    (
        "Zoe",
        "December 22",
        "is allergic to kiwi and strawberries",
        "prefers to be messaged on Instagram",
    ),
]


def people_items() -> list[Item]:
    items: list[Item] = []
    for name, birthday, diet, reach in PEOPLE:
        items.append(
            (
                "birthday",
                f"{name}'s birthday is on {birthday}.",
                [f"When is {name} celebrating turning a year older?"],
            )
        )
        items.append(
            (
                "diet",
                f"{name} {diet}.",
                [f"If I cook dinner for {name}, what should I keep off the menu?"],
            )
        )
        items.append(
            (
                "reach",
                f"{name} {reach}.",
                [f"What's the best way to get hold of {name}?"],
            )
        )
    return items


# -- hand-written notes ----------------------------------------------------------------------

HAND: list[Item] = [
    # meetings
    (
        "meeting",
        "Board meeting moved to the 14th at 10am, room B.",
        ["When are the directors getting together?", "Where will the board sit this month?"],
    ),
    (
        "meeting",
        "Weekly standup is now at 9:30 instead of 9:15, starting Monday.",
        ["What time is the daily team sync now?"],
    ),
    (
        "meeting",
        "Quarterly business review with Globex is on Thursday the 21st at 2pm, their offices.",
        ["When do we present the quarter's results to Globex?"],
    ),
    (
        "meeting",
        "Design review for the new checkout flow: Friday 3pm, bring the Figma links.",
        ["When do we go over the mock-ups for the new payment pages?"],
    ),
    (
        "meeting",
        "Sprint retrospective cancelled this week; next one on the 28th.",
        ["Is the retro happening this week?"],
    ),
    (
        "meeting",
        "All-hands on May 2 in the big auditorium; the CEO will present the roadmap.",
        ["Where is the company-wide meeting held?"],
    ),
    (
        "meeting",
        "Budget planning for next year starts October 1; finance wants drafts by the 15th.",
        ["When are next year's spending plans due to finance?"],
    ),
    (
        "meeting",
        "Hiring committee meets every other Tuesday at 4pm to review candidates.",
        ["How often do we discuss job applicants?"],
    ),
    (
        "meeting",
        "Team offsite in the Lake District, September 18-20; the coach leaves at 7am.",
        ["What time does the bus for the away days depart?"],
    ),
    (
        "meeting",
        "One-to-one with Maria moved to Wednesdays at 11.",
        ["When do I catch up with Maria privately?"],
    ),
    (
        "meeting",
        "Security incident post-mortem scheduled for Tuesday at 1pm; blameless format.",
        ["When are we going through what went wrong in the breach?"],
    ),
    (
        "meeting",
        "Parent-teacher conference for Leo is on the 9th at 5:40pm with Mrs Alvarez.",
        ["When do I meet my son's teacher?"],
    ),
    (
        "meeting",
        "Dentist rescheduled the cleaning; our landlord inspection is now on the 12th at noon.",
        ["When is the flat inspection?"],
    ),
    # code and infrastructure
    (
        "code",
        "The payments service retries failed webhooks five times with exponential backoff.",
        ["How many attempts does billing make when a callback fails?"],
    ),
    (
        "code",
        "Staging database is PostgreSQL 15 on db-staging-2; production is still on 14.",
        ["Which Postgres version runs in prod?", "What host is the pre-production database on?"],
    ),
    (
        "code",
        "The public API rate limit is 100 requests per minute per token.",
        ["How many calls per minute can a client make?"],
    ),
    (
        "code",
        "We pin numpy below 2.0 because the pandas build breaks on the new ABI.",
        ["Why can't we upgrade numpy yet?"],
    ),
    (
        "code",
        "Deploys to production are frozen from December 20 to January 3.",
        ["Can I ship to prod over the holidays?"],
    ),
    (
        "code",
        "The nightly backup job runs at 02:00 UTC and keeps 30 days of snapshots.",
        ["How long do we keep database backups?", "When does the overnight backup start?"],
    ),
    (
        "code",
        "Feature flags live in LaunchDarkly; the kill switch for search is search-v2-enabled.",
        ["How do I turn off the new search quickly?"],
    ),
    (
        "code",
        "The auth service signs JWTs with RS256; keys rotate every 90 days.",
        ["How often are the token signing keys changed?"],
    ),
    (
        "code",
        "Logs are shipped to Loki and kept for 14 days; audit logs go to S3 for seven years.",
        ["How long are audit records retained?", "Where do application logs end up?"],
    ),
    (
        "code",
        "Use Python 3.12 for new services; 3.9 services must be upgraded by Q3.",
        ["Which interpreter version should a new service use?"],
    ),
    (
        "code",
        "The mobile app talks to api-gateway through a GraphQL endpoint at /graphql.",
        ["What endpoint does the phone app query?"],
    ),
    (
        "code",
        "Our Kubernetes clusters autoscale between 3 and 12 nodes in eu-west-1.",
        ["How many machines can the cluster grow to?"],
    ),
    (
        "code",
        "The search index is rebuilt every Sunday at 4am; a full rebuild takes 40 minutes.",
        ["How long does reindexing everything take?"],
    ),
    (
        "code",
        "To run the integration tests locally, start docker compose with the test profile.",
        ["How do I get the end-to-end tests running on my laptop?"],
    ),
    (
        "code",
        "The flaky test test_checkout_timeout is quarantined until the Stripe mock is fixed.",
        ["Why is that checkout timeout test skipped?"],
    ),
    (
        "code",
        "Redis is used only as a cache; never store sessions in it, they live in Postgres.",
        ["Where are user sessions persisted?"],
    ),
    (
        "code",
        "The CI pipeline fails if coverage drops below 85 percent.",
        ["What test coverage does the build require?"],
    ),
    (
        "code",
        "Error budget for the checkout API is 99.9 percent availability per month.",
        ["What uptime target do we have for checkout?"],
    ),
    (
        "code",
        "The legacy billing cron on billing-old-1 must not be restarted during month end.",
        ["Is it safe to reboot the old invoicing box on the 31st?"],
    ),
    (
        "code",
        "Git branch naming: feature/<ticket>-short-description, hotfix/<ticket> for urgent fixes.",
        ["How should I name a branch for an urgent patch?"],
    ),
    (
        "code",
        "The on-call rotation changes every Monday at 10am; handover happens in #ops.",
        ["When does the pager pass to the next person?"],
    ),
    (
        "code",
        "The CDN caches images for 24 hours; purge with the cache-bust script in tools/.",
        ["How do I clear cached pictures on the edge?"],
    ),
    # travel
    (
        "travel",
        "Flight to Lisbon: TP 1353 departs 07:40 on May 12, seat 14C.",
        ["What time does my plane to Portugal leave?", "Which seat do I have on the Lisbon trip?"],
    ),
    (
        "travel",
        "Hotel in Berlin: Hotel Adlon, confirmation 88213, check-in June 3.",
        ["Where am I staying in Germany and what's the booking number?"],
    ),
    (
        "travel",
        "Train to Edinburgh leaves King's Cross at 10:00 on the 8th, coach F, seats 41-42.",
        ["Which carriage are we in on the trip to Scotland?"],
    ),
    (
        "travel",
        "Passport expires in November next year; renew before booking the Japan trip.",
        ["When does my travel document run out?"],
    ),
    (
        "travel",
        "Car rental in Reykjavik: a 4x4 from Blue Car, pick up at the airport at 16:00.",
        ["Where do we collect the jeep in Iceland?"],
    ),
    (
        "travel",
        "Return flight from New York is Delta 402, JFK terminal 4, 21:15 on the 19th.",
        ["Which terminal do we fly home from in the States?"],
    ),
    (
        "travel",
        "Airbnb in Rome near Trastevere; door code 4471, host is Giulia.",
        ["How do I get into the apartment in Italy?"],
    ),
    (
        "travel",
        "Travel insurance with Allianz, policy 55-902-118, covers skiing.",
        ["Does our trip cover include winter sports?"],
    ),
    (
        "travel",
        "The ferry to Mallorca sails from Barcelona at 23:00; cabin 512.",
        ["What's our room number on the overnight boat?"],
    ),
    (
        "travel",
        "Visa for India approved; e-visa PDF saved in the travel folder, valid 30 days.",
        ["How long can I stay with the Indian entry permit?"],
    ),
    (
        "travel",
        "Airport parking at Gatwick booked: South Terminal, booking GT-7731.",
        ["Where did we reserve a space for the car at the airport?"],
    ),
    (
        "travel",
        "Conference in Austin: badge pick-up opens at 8am on the first day, hall 3.",
        ["Where do I collect my name tag at the Texas event?"],
    ),
    # health
    (
        "health",
        "Dentist appointment with Dr. Patel on October 2 at 3pm.",
        ["When do I need to get my teeth checked?"],
    ),
    (
        "health",
        "Take amoxicillin 500mg three times a day for seven days, with food.",
        ["How often do I take the antibiotic?"],
    ),
    (
        "health",
        "I am allergic to penicillin: hives last time.",
        ["Which medicine gives me a reaction?"],
    ),
    (
        "health",
        "Blood pressure reading 128/82 on Monday morning, resting.",
        ["What was my last BP measurement?"],
    ),
    (
        "health",
        "Physiotherapy for the left knee: Tuesdays and Thursdays at 6pm for six weeks.",
        ["When are my rehab sessions for the leg?"],
    ),
    (
        "health",
        "Flu jab done at the pharmacy on October 14.",
        ["Have I had this year's influenza vaccine?"],
    ),
    (
        "health",
        "Eye test result: reading glasses +1.25 both eyes; next check in two years.",
        ["What strength are my spectacles?"],
    ),
    (
        "health",
        "Cholesterol came back at 5.8; the GP wants a retest in three months.",
        ["When should I redo the blood lipid test?"],
    ),
    (
        "health",
        "Vitamin D, 1000 IU daily through the winter.",
        ["What supplement am I taking during the cold months?"],
    ),
    (
        "health",
        "The kids' vaccination booklet is in the blue folder in the study.",
        ["Where are the children's immunisation records?"],
    ),
    (
        "health",
        "Dog's vet appointment for the annual booster: Saturday 9:30 at Greenfield Vets.",
        ["When does the puppy go for its jabs?"],
    ),
    (
        "health",
        "Slept badly after late coffee; no caffeine after 2pm from now on.",
        ["What cut-off did I set for espresso?"],
    ),
    (
        "health",
        "Running plan: 5k on Tuesday, intervals on Thursday, long run of 12k on Sunday.",
        ["How far is my weekend jog?"],
    ),
    # recipes and food
    (
        "recipe",
        "Grandma's banana bread: 3 ripe bananas, 1/3 cup melted butter, bake 60 minutes at 175C.",
        ["How long does the banana loaf go in the oven?"],
    ),
    (
        "recipe",
        "Pizza dough: 500g flour, 325ml water, 10g salt, 3g yeast; rest 24 hours in the fridge.",
        ["How much water goes in the pizza base?"],
    ),
    (
        "recipe",
        "Dal: red lentils, turmeric, cumin seeds fried in ghee, simmer 25 minutes.",
        ["Which spices go in the lentil curry?"],
    ),
    (
        "recipe",
        "Pancakes for four: 2 eggs, 250ml milk, 125g flour, a pinch of salt.",
        ["How many eggs for the crepes?"],
    ),
    (
        "recipe",
        "Roast chicken: 200C for 20 minutes per 500g plus 20 minutes, rest 15 minutes.",
        ["How do I work out cooking time for the roast bird?"],
    ),
    (
        "recipe",
        "Cold brew: 100g coarse coffee to 1 litre of water, steep 16 hours.",
        ["What ratio do I use for iced coffee?"],
    ),
    (
        "recipe",
        "Tomato sauce freezes well for three months; label the tubs with the date.",
        ["How long does the pasta sauce keep in the freezer?"],
    ),
    (
        "recipe",
        "Sourdough starter is fed 1:1:1 every evening; it lives on the top shelf of the fridge.",
        ["How do I keep the bread culture alive?"],
    ),
    (
        "recipe",
        "Guacamole: two avocados, lime, red onion, coriander, salt; lime first so it stays green.",
        ["How do I stop the avocado dip going brown?"],
    ),
    (
        "recipe",
        "Christmas pudding needs to be steamed for six hours and fed with brandy weekly.",
        ["How long does the festive dessert steam for?"],
    ),
    (
        "recipe",
        "Risotto: toast the rice, add stock one ladle at a time, about 18 minutes in total.",
        ["How long do I stir the arborio for?"],
    ),
    (
        "recipe",
        "Hummus: soak chickpeas overnight, blend with tahini, garlic and lemon juice.",
        ["What goes into the chickpea spread?"],
    ),
    # household
    (
        "home",
        "Guest Wi-Fi network is casa-guest, password sunflower-42.",
        ["What's the internet code for visitors?"],
    ),
    (
        "home",
        "Boiler serviced on September 5 by Hartley Heating; next service due next September.",
        ["When is the heating system due its check?"],
    ),
    (
        "home",
        "Bins: general waste Tuesday night, recycling every other Thursday.",
        ["Which evening does the rubbish go out?"],
    ),
    (
        "home",
        "Car insurance with Direct Line renews on August 17; premium was 540 pounds.",
        ["When does the motor policy come up for renewal?"],
    ),
    (
        "home",
        "The stopcock is under the kitchen sink behind the cleaning products.",
        ["Where do I turn the water off in an emergency?"],
    ),
    (
        "home",
        "Spare house key is with Mrs Okafor at number 12.",
        ["Which neighbour has a copy of our key?"],
    ),
    (
        "home",
        "Electricity meter reading 48213 on March 1; the supplier is Octopus.",
        ["What did the power meter say at the start of March?"],
    ),
    (
        "home",
        "Window cleaner comes on the first Friday of each month, paid 25 pounds cash.",
        ["How much do we give the person who does the glass?"],
    ),
    (
        "home",
        "The washing machine warranty runs until June 2026; receipt is in the drawer.",
        ["Is the washer still under guarantee?"],
    ),
    (
        "home",
        "Smoke alarm batteries replaced on January 2.",
        ["When did I last change the fire detector batteries?"],
    ),
    (
        "home",
        "Council tax is band C, paid by direct debit on the 1st.",
        ["How is the local property tax paid?"],
    ),
    (
        "home",
        "Plumber for emergencies: Dave Wilson, 07700 900123, charges a 60 pound call-out.",
        ["Who do I ring if a pipe bursts?"],
    ),
    (
        "home",
        "The kitchen paint is Farrow and Ball Skimming Stone, eggshell finish.",
        ["What colour did we use on the kitchen walls?"],
    ),
    (
        "home",
        "Lawn mower is stored in the garage; the petrol can is on the left shelf.",
        ["Where's the fuel for the grass cutter?"],
    ),
    (
        "home",
        "Cat food: Whiskas senior, two pouches a day, no dry food since the vet visit.",
        ["What does the cat eat now?"],
    ),
    (
        "home",
        "Virgin internet contract ends in October; no auto-renew, BT offered a cheaper deal.",
        ["When can I switch broadband provider?"],
    ),
    # finance
    (
        "finance",
        "Rent is 1,450 euros, due on the 1st, transferred to the landlord Mr Brandt.",
        ["How much is the monthly housing payment?"],
    ),
    (
        "finance",
        "Pension contributions raised to 8 percent of salary from April.",
        ["What share of my pay goes into retirement savings?"],
    ),
    (
        "finance",
        "Tax return deadline is January 31; the accountant needs receipts by the 10th.",
        ["When must I give my bookkeeper the paperwork?"],
    ),
    (
        "finance",
        "Emergency fund target: six months of expenses, currently at four.",
        ["How many months of costs have I saved so far?"],
    ),
    (
        "finance",
        "Netflix, Spotify and the gym are the only subscriptions left after the clean-up.",
        ["Which recurring charges do I still pay for?"],
    ),
    (
        "finance",
        "Mortgage fixed at 4.1 percent until March 2027 with Nationwide.",
        ["When does my home loan rate expire?"],
    ),
    (
        "finance",
        "Lent Jamie 200 pounds for the festival tickets; he will pay back in June.",
        ["How much does Jamie owe me?"],
    ),
    (
        "finance",
        "Company expenses must be filed within 30 days with a scanned receipt.",
        ["How long do I have to claim back work costs?"],
    ),
    (
        "finance",
        "Bonus is paid in March, based on the December performance review.",
        ["When will the annual incentive arrive?"],
    ),
    (
        "finance",
        "Savings account at Marcus pays 4.3 percent; the ISA allowance is used up this year.",
        ["What interest does my savings pot earn?"],
    ),
    # shopping and purchases
    (
        "shopping",
        "Ordered a standing desk from Fully on the 3rd; delivery expected in two weeks.",
        ["When will the sit-stand table arrive?"],
    ),
    (
        "shopping",
        "Returned the blue running shoes to Decathlon; refund of 89 euros pending.",
        ["Did I get my money back for the trainers?"],
    ),
    (
        "shopping",
        "Laptop is a ThinkPad X1 Carbon, serial PF3K2L9, bought in March 2023.",
        ["What's the serial number of my work computer?"],
    ),
    (
        "shopping",
        "Gift for Mum: the silk scarf from Liberty, already wrapped, hidden in the wardrobe.",
        ["Where did I put my mother's present?"],
    ),
    (
        "shopping",
        "Need a new bike chain: 11-speed, Shimano compatible.",
        ["What kind of chain fits my bicycle?"],
    ),
    (
        "shopping",
        "Printer ink is HP 305XL; the black runs out first.",
        ["Which cartridge does the printer take?"],
    ),
    (
        "shopping",
        "The sofa from Made arrives between 8am and 1pm on Saturday.",
        ["What's the delivery window for the couch?"],
    ),
    (
        "shopping",
        "Coffee beans: Square Mile Red Brick, grind setting 14 on the Baratza.",
        ["What grind do I use for my espresso beans?"],
    ),
    # work and projects
    (
        "work",
        "Project Atlas launch slipped to September because of the data migration.",
        ["Why is Atlas late?"],
    ),
    (
        "work",
        "Performance review self-assessment is due on the 20th in Workday.",
        ["When do I have to submit my own appraisal?"],
    ),
    (
        "work",
        "The marketing budget for Q3 is 45,000 euros, half of it for events.",
        ["How much can marketing spend next quarter?"],
    ),
    (
        "work",
        "Interview with the backend candidate Elena Ruiz went well; strong on distributed systems.",
        ["How did the engineering applicant do?"],
    ),
    (
        "work",
        "Office closed on Friday for the electrical works; work from home.",
        ["Can I go into the building on Friday?"],
    ),
    (
        "work",
        "New expense policy: economy class for flights under six hours.",
        ["Can I fly business on a four-hour trip?"],
    ),
    (
        "work",
        "Jenny from legal approved the data processing agreement with the new vendor.",
        ["Did the lawyers sign off on the DPA?"],
    ),
    (
        "work",
        "The churn rate was 3.2 percent last month, down from 4 percent.",
        ["How many customers did we lose recently?"],
    ),
    (
        "work",
        "Revenue grew 18 percent year over year in Q2, driven by the enterprise plan.",
        ["How fast did sales increase in the second quarter?"],
    ),
    (
        "work",
        "Support tickets doubled after the app update; most are login problems.",
        ["What are people complaining about since the release?"],
    ),
    (
        "work",
        "Quarterly OKR: cut median page load below 1.5 seconds.",
        ["What's our speed goal for the website this quarter?"],
    ),
    (
        "work",
        "Parental leave policy: 20 weeks fully paid for any parent.",
        ["How much paid time off do new dads get?"],
    ),
    (
        "work",
        "Laptop refresh: engineers get a new machine every three years.",
        ["How often is my work computer replaced?"],
    ),
    (
        "work",
        "Conference talk accepted at PyCon; 30-minute slot on day two.",
        ["How long is my presentation at the Python conference?"],
    ),
    # family, friends, personal
    (
        "personal",
        "Leo's school play is on December 11 at 6pm; he plays a shepherd.",
        ["What role does my son have in the nativity?"],
    ),
    (
        "personal",
        "Anniversary dinner booked at Dishoom for 8pm on the 23rd.",
        ["Where are we eating to celebrate our wedding date?"],
    ),
    (
        "personal",
        "Emma's swimming lessons are Saturdays at 10am at the leisure centre.",
        ["When does my daughter go to the pool?"],
    ),
    (
        "personal",
        "Book club is reading The Remains of the Day for next month.",
        ["Which novel do we discuss next time?"],
    ),
    (
        "personal",
        "Ben recommended the series Slow Horses on Apple TV.",
        ["What show did Ben tell me to watch?"],
    ),
    (
        "personal",
        "Piano practice: twenty minutes a day on scales, then the Chopin nocturne.",
        ["Which piece am I learning on the keyboard?"],
    ),
    (
        "personal",
        "Volunteering at the food bank the second Sunday of each month, 9 to 12.",
        ["When do I help out with the charity food parcels?"],
    ),
    ("personal", "Mum's new phone number is 0161 496 0734.", ["How do I call my mother now?"]),
    (
        "personal",
        "Wedding of Sam and Priya on July 19 in Bath; dress code is black tie.",
        ["What do I wear to the ceremony in Somerset?"],
    ),
    (
        "personal",
        "Spanish class on Wednesdays at 7pm; homework is the subjunctive chapter.",
        ["What grammar do I need to study for my language lesson?"],
    ),
    (
        "personal",
        "Garden: plant the tulip bulbs in November, about 15cm deep.",
        ["How deep do the spring flower bulbs go?"],
    ),
    (
        "personal",
        "Password manager is Bitwarden; the recovery code is in the safe.",
        ["Where is the backup code for my vault of logins?"],
    ),
    (
        "personal",
        "Car MOT due on May 30 at the Kwik Fit on Station Road.",
        ["When is the annual vehicle inspection?"],
    ),
    (
        "personal",
        "Cousin Ahmed is visiting from Cairo from the 4th to the 11th of August.",
        ["When will my relative from Egypt be here?"],
    ),
    (
        "personal",
        "Chess club at the library on Thursday evenings; bring your own clock.",
        ["When do people meet to play chess?"],
    ),
    (
        "personal",
        "Marathon registration for Berlin opens on October 25 at noon.",
        ["When can I sign up for the race in Germany?"],
    ),
    # more of everyday life
    (
        "meeting",
        "Investor call with Sequoia on the 6th at 5pm London time; deck v7 is final.",
        ["When do we pitch to the venture capital firm?"],
    ),
    (
        "meeting",
        "Onboarding session for the new hires every first Monday, 10am, room A.",
        ["When is the welcome session for people who just joined?"],
    ),
    (
        "code",
        "Staging is reset from a production snapshot every Saturday night, with emails scrubbed.",
        ["How often is the test environment refreshed with real data?"],
    ),
    (
        "code",
        "The mail service sends through Postmark; bounces are logged to the email_events table.",
        ["Where can I see undelivered messages?"],
    ),
    (
        "code",
        "Timezone rule: store timestamps in UTC, convert only in the browser.",
        ["Which clock should dates be saved in?"],
    ),
    (
        "code",
        "The monorepo uses pnpm workspaces; never run npm install at the root.",
        ["What package manager does the JavaScript repo use?"],
    ),
    (
        "travel",
        "Lyon trip: the TGV leaves Paris Gare de Lyon at 8:56; platform shown 20 minutes before.",
        ["What time is the fast train down to Lyon?"],
    ),
    (
        "travel",
        "Camping at Loch Lomond: pitch 23, quiet hours after 10pm.",
        ["Which spot did we book for the tent in Scotland?"],
    ),
    (
        "travel",
        "The Tokyo hotel is the Park Hyatt in Shinjuku, breakfast included.",
        ["Is the morning meal part of our Japan accommodation?"],
    ),
    (
        "health",
        "Physio said to ice the knee for 15 minutes after every run.",
        ["What should I do with my leg after jogging?"],
    ),
    (
        "health",
        "Mole on the left shoulder checked by the dermatologist: benign, look again in a year.",
        ["What did the skin doctor say about the spot on my back?"],
    ),
    (
        "health",
        "Hay fever tablets: cetirizine, one a day from May to July.",
        ["What do I take for my pollen allergy?"],
    ),
    (
        "recipe",
        "Chilli con carne is better the next day; use two squares of dark chocolate.",
        ["What's the secret ingredient in the beef and bean stew?"],
    ),
    (
        "recipe",
        "Lemon drizzle cake: pour the syrup while the sponge is still warm.",
        ["When do I add the sugary glaze to the citrus cake?"],
    ),
    (
        "recipe",
        "Granola: oats, honey, almonds, 160C for 25 minutes, stir halfway.",
        ["What temperature for the homemade muesli?"],
    ),
    (
        "home",
        "The fuse box is in the hallway cupboard above the coats.",
        ["Where are the circuit breakers?"],
    ),
    (
        "home",
        "Cleaner comes Wednesday mornings; leave the keys in the lockbox, code 2580.",
        ["How does the housekeeper get in?"],
    ),
    (
        "home",
        "Smart thermostat schedule: 20C from 6 to 9am and 5 to 10pm, 16C otherwise.",
        ["How warm is the house set to in the evening?"],
    ),
    (
        "finance",
        "Car loan paid off in February; the V5C logbook came in the post.",
        ["Do I still have payments on the car?"],
    ),
    (
        "finance",
        "Charity direct debits: 10 pounds a month to Shelter and 5 to the RNLI.",
        ["How much do I give to the homeless charity?"],
    ),
    (
        "shopping",
        "Running shoes size 44.5 in Asics, 43 in Nike; Nike run small.",
        ["What size trainers do I buy from Asics?"],
    ),
    (
        "shopping",
        "Replacement Dyson filter is model 965661-01.",
        ["Which part number do I order for the vacuum?"],
    ),
    (
        "work",
        "Code freeze for the 4.0 release starts on the 18th; only bug fixes after that.",
        ["Until when can I merge new features for the major version?"],
    ),
    (
        "work",
        "Our biggest customer by revenue is Stark Industries, about 14 percent of ARR.",
        ["Which client brings in the most money?"],
    ),
    (
        "personal",
        "Leo needs his football boots and shin pads for Saturday's match.",
        ["What does my son have to pack for the game?"],
    ),
    (
        "personal",
        "Neighbour's party on the 15th is bring-a-bottle; starts at 7.",
        ["What should I take to the gathering next door?"],
    ),
    # near-miss pairs written on purpose: shared words, different meaning
    (
        "nearmiss",
        "Board games night at Tom's on Friday; bring snacks.",
        ["Where are we playing Catan this week?"],
    ),
    (
        "nearmiss",
        "The kitchen board (chopping) is cracked; order a new walnut one.",
        ["What needs replacing among the cooking utensils?"],
    ),
    (
        "nearmiss",
        "Invoice template updated: add the VAT number under the logo.",
        ["Where does the tax ID go on our billing documents?"],
    ),
    (
        "nearmiss",
        "Globex office moved to 5 Harbour Street; parking is behind the building.",
        ["What's the new address of the Globex office?"],
    ),
    (
        "nearmiss",
        "Initech hired a new CTO, Samir Nagheenanajar.",
        ["Who is Initech's technical chief now?"],
    ),
    (
        "nearmiss",
        "Paid the window cleaner and the gardener in cash on Saturday.",
        ["Did I hand over money to the person who does the garden?"],
    ),
    (
        "nearmiss",
        "Meeting room C projector is broken; use room B or the big screen in the kitchen.",
        ["Which conference room has a faulty beamer?"],
    ),
    (
        "nearmiss",
        "Flight simulator software licence renews every March.",
        ["When does the aviation training program need renewing?"],
    ),
    (
        "nearmiss",
        "Python the snake at the zoo is fed on Sundays; the kids want to watch.",
        ["When can the children see the reptile eat?"],
    ),
    (
        "nearmiss",
        "Bank holiday on Monday: the office and the bank are both closed.",
        ["Is the branch open on Monday?"],
    ),
    (
        "nearmiss",
        "Maria from accounting (not Maria in design) handles the expense approvals.",
        ["Which Maria approves reimbursements?"],
    ),
    (
        "nearmiss",
        "The March invoice run was delayed by a day because of the bank holiday.",
        ["Why did bills go out late in March?"],
    ),
    (
        "nearmiss",
        "Apple picking at Brogdale farm on the 5th; the orchard opens at 9.",
        ["When are we going fruit picking?"],
    ),
    (
        "nearmiss",
        "Apple Watch battery drains fast since the update; try resetting it.",
        ["Why is my smartwatch dying so quickly?"],
    ),
    (
        "nearmiss",
        "Java the café on the corner closes at 4pm on Sundays.",
        ["When does the coffee shop down the road shut at weekends?"],
    ),
    (
        "nearmiss",
        "Java 21 upgrade for the ingestion service is planned for sprint 14.",
        ["When do we move the pipeline to the new JDK?"],
    ),
    (
        "nearmiss",
        "Mercury in the old thermometer: take it to the hazardous waste site, not the bin.",
        ["How do I get rid of the broken temperature gauge?"],
    ),
    (
        "nearmiss",
        "Amazon order of printer paper arrives Tuesday; Amazon Web Services bill is due Friday.",
        ["When do the office reams come?"],
    ),
    (
        "nearmiss",
        "Our AWS bill jumped to 3,400 dollars because of the unused load balancers.",
        ["Why did the cloud costs spike?"],
    ),
    (
        "nearmiss",
        "Jaguar the car needs new tyres before winter.",
        ["What does my vehicle need before the cold weather?"],
    ),
]

# Questions answered by two notes together (a person asks one question whose answer is
# spread over two notes). (question, [indexes into HAND by exact note text prefix])
MULTI: list[tuple[str, list[str]]] = [
    (
        "Which Globex things do I have on: the review date and where their office is now?",
        ["Quarterly business review with Globex", "Globex office moved"],
    ),
    (
        "What are my flights: the one to Portugal and the one home from America?",
        ["Flight to Lisbon", "Return flight from New York"],
    ),
    (
        "What do I need to know about my medication: the antibiotic dose and what I'm allergic to?",
        ["Take amoxicillin", "I am allergic to penicillin"],
    ),
    (
        "Which Apple notes did I make: the fruit trip and the watch?",
        ["Apple picking", "Apple Watch battery"],
    ),
    (
        "What do I pay each month for housing and for the council?",
        ["Rent is 1,450 euros", "Council tax is band C"],
    ),
    ("What are the two Java things on my list?", ["Java the café", "Java 21 upgrade"]),
    (
        "What's the status of the backups and the search index rebuild schedule?",
        ["The nightly backup job", "The search index is rebuilt"],
    ),
    (
        "Which appointments do I have for teeth and eyes?",
        ["Dentist appointment with Dr. Patel", "Eye test result"],
    ),
]


def build() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Notes (key, text, topic) in their storage order and questions (question, keys, topic)."""
    items = company_items() + people_items() + HAND
    texts = [text for _, text, _ in items]
    if len(set(texts)) != len(texts):
        raise SystemExit("duplicate note text")
    order = list(range(len(items)))
    random.Random(SEED).shuffle(order)
    key_of: dict[int, str] = {}
    notes: list[dict[str, object]] = []
    for position, index in enumerate(order, start=1):
        key = f"n{position:03d}"
        key_of[index] = key
        topic, text, _ = items[index]
        notes.append({"key": key, "text": text, "topic": topic})
    questions: list[dict[str, object]] = []
    for index, (topic, _, asked) in enumerate(items):
        for question in asked:
            questions.append({"question": question, "keys": [key_of[index]], "topic": topic})
    for question, prefixes in MULTI:
        keys = []
        for prefix in prefixes:
            found = [i for i, text in enumerate(texts) if text.startswith(prefix)]
            if len(found) != 1:
                raise SystemExit(f"multi-note prefix {prefix!r} matches {len(found)} notes")
            keys.append(key_of[found[0]])
        questions.append({"question": question, "keys": keys, "topic": "multi"})
    return notes, questions


def main() -> None:
    notes, questions = build()
    for name, rows in (("notes.jsonl", notes), ("questions.jsonl", questions)):
        with (HERE / name).open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(notes)} notes, {len(questions)} questions written to {HERE}")


if __name__ == "__main__":
    main()
