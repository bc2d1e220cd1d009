"""Writes dllm_nb/assets/prompts/instructions_more.jsonl.gz: several thousand more training prompts for DFlash
self-distillation (`shipped:more`), composed from templates and fillers written for this project, every one
`split: train`, none equal to a prompt of instructions.jsonl (whose held-out split stays the benchmark) or of
instructions_extra.jsonl. The kinds follow the shipped set's (arithmetic, rewriting, lists, facts, code, chat).
Why: a drafter trained on the 779 prompts of shipped:train + shipped:extra reaches tau ~3 on its own training prompts
but ~1.4 on held-out ones: it lacks prompt variety, not steps. Gzipped so the package stays small. Run once:
    python tools/make_more_prompts.py
"""
import gzip, json, random
from pathlib import Path

rng = random.Random(20261203)
N_PER_KIND = dict(arithmetic=1300, rewriting=1100, lists=900, facts=1100, code=800, chat=800)

NAMES = ["Tom", "Sara", "Ali", "Mia", "Leo", "Nina", "Omar", "Emma", "Raj", "Lucy", "Ben", "Ana", "Kofi", "Yuki", "Ivan", "Zoe"]
ITEMS = ["apples", "pencils", "stickers", "marbles", "cookies", "books", "oranges", "stamps", "cards", "eggs", "balloons", "shells"]

def arithmetic():
    r = rng.randint
    t = [lambda: f"What is {r(10, 999)} + {r(10, 999)}?", lambda: f"Compute {r(100, 999)} - {r(10, 99)}.",
         lambda: f"What is {r(2, 30)} times {r(2, 30)}?", lambda: (lambda b: f"Divide {b * r(2, 20)} by {b}.")(r(2, 12)),
         lambda: f"What is {r(1000, 9999)} + {r(100, 999)}?", lambda: f"Subtract {r(10, 99)} from {r(100, 999)}.",
         lambda: f"Add {r(10, 99)} and {r(10, 99)}.", lambda: f"Multiply {r(11, 99)} by {r(2, 9)}.",
         lambda: f"What is {r(2, 12)} times {r(2, 12)} plus {r(1, 20)}?", lambda: f"Calculate {r(10, 99)} * {r(10, 99)}.",
         lambda: f"{rng.choice(NAMES)} has {r(20, 90)} {rng.choice(ITEMS)} and gives away {r(2, 19)}. How many are left?",
         lambda: f"{rng.choice(NAMES)} buys {r(2, 9)} bags with {r(3, 12)} {rng.choice(ITEMS)} in each. How many {rng.choice(ITEMS)} is that in total?",
         lambda: f"A shop sells {rng.choice(ITEMS)} for {r(20, 400)} cents each. How much do {r(2, 19)} cost?",
         lambda: f"A rectangle is {r(3, 150)} cm long and {r(2, 40)} cm wide. What is its area?",
         lambda: f"A square has sides of {r(2, 30)} m. What is its perimeter?",
         lambda: f"How many minutes are there in {r(2, 24)} hours?", lambda: f"How many hours are there in {r(2, 14)} days?",
         lambda: f"How many days are there in {r(2, 20)} weeks?", lambda: f"Convert {r(2, 90)} kilometres to metres.",
         lambda: f"Convert {r(100, 9000)} grams to kilograms.", lambda: f"What is {rng.choice([10, 20, 25, 50, 75])}% of {r(2, 40) * 10}?",
         lambda: (lambda a, b: f"Which is larger, {a} or {b}?")(round(rng.random(), 2), round(rng.random(), 2)),
         lambda: f"Is {r(2, 999)} an even or an odd number?", lambda: f"Is {r(2, 99)} a prime number?",
         lambda: f"What is the square of {r(2, 25)}?", lambda: f"Round {r(1, 99)}.{r(1, 9)} to the nearest whole number.",
         lambda: f"A train travels {r(50, 600)} km in {r(2, 8)} hours. What is its average speed?",
         lambda: f"If a book has {r(100, 500)} pages and I read {r(10, 40)} pages a day, how many days will it take?",
         lambda: f"What is the next number in the sequence {(lambda a, d: ', '.join(str(a + d * i) for i in range(4)))(r(1, 20), r(2, 9))}?",
         lambda: f"What is {r(2, 9)}/{r(10, 12)} of {r(2, 12) * 12}?", lambda: f"What is half of {r(10, 500) * 2}?",
         lambda: f"A pizza is cut into {r(6, 12)} slices and {r(2, 5)} people share it equally. How many slices does each get?",
         lambda: f"The temperature was {r(-10, 10)} degrees and rose by {r(2, 15)} degrees. What is it now?",
         lambda: f"{rng.choice(NAMES)} is {r(6, 40)} years old. How old will they be in {r(2, 20)} years?",
         lambda: f"What is the sum of the numbers from 1 to {r(5, 30)}?", lambda: f"Write {r(11, 999)} in words."]
    return [rng.choice(t)() for _ in range(20 * N_PER_KIND['arithmetic'])]

SUBJ = ["My sister", "The old man", "Our teacher", "The children", "My neighbour", "The manager", "A young girl", "The doctor",
        "Everyone in the office", "My best friend", "The farmer", "The students", "Our dog", "The pilot", "My parents",
        "The new student", "The baker", "The team", "Her brother", "The tourists", "The police officer", "The artist"]
PRED = ["painted the fence", "cooked dinner for the whole family", "lost the keys to the car", "read three books",
        "planted a tree in the garden", "missed the last bus", "fixed the broken chair", "wrote a long letter to a friend",
        "cleaned the kitchen", "forgot to bring lunch", "visited the museum", "ran five kilometres", "baked a chocolate cake",
        "found a wallet on the street", "sang a song at the party", "built a small wooden boat", "bought a new bicycle",
        "watched the sunset from the hill", "learned to play the violin", "moved to a bigger flat", "answered every question correctly",
        "spilled coffee on the report", "took photos of the mountains", "helped an old lady cross the road", "fed the ducks at the pond",
        "won a prize at the science fair", "repaired the roof before the storm", "made a cake for the neighbours", "sold the old car"]
WHEN = ["yesterday", "last weekend", "this morning", "on Monday", "after school", "before breakfast", "last summer",
        "during the holidays", "late at night", "two days ago", "at the weekend", "last year"]
WHY_ = ["", "", " because it was raining", " although it was late", " because nobody else could", " to surprise everyone",
        " even though it was very cold", " as quickly as possible"]
RW = ["Rewrite this sentence in a more formal tone: {s}", "Make this sentence shorter: {s}", "Rewrite this sentence in the past tense: {s}",
      "Paraphrase the following sentence: {s}", "Fix the grammar and make it sound friendlier: {s}",
      "Translate this sentence into simple English for a child: {s}", "Rewrite this sentence in the present tense: {s}",
      "Rewrite this sentence in the future tense: {s}", "Rewrite this sentence as a question: {s}", "Simplify this sentence: {s}",
      "Make this sentence more exciting: {s}", "Rewrite this sentence in the passive voice: {s}", "Summarize in one sentence: {s}",
      "Turn this into a polite request: {s}", "Correct the spelling in this sentence: {s}", "Write the opposite of this sentence: {s}"]
TYPOS = [("because", "becuase"), ("friend", "freind"), ("kitchen", "kitchin"), ("received", "recieved"), ("yesterday", "yesturday"),
         ("beautiful", "beutiful"), ("weekend", "weekand"), ("morning", "mornin")]

def rewriting():
    out = []
    for _ in range(20 * N_PER_KIND['rewriting']):
        s = f"{rng.choice(SUBJ)} {rng.choice(PRED)} {rng.choice(WHEN)}{rng.choice(WHY_)}."
        t = rng.choice(RW)
        if 'spelling' in t:
            a, b = rng.choice(TYPOS); s = s.replace(a, b) if a in s else s.replace(' the ', ' teh ', 1)
        out.append(t.format(s=s))
    return out

CATS = ["fruits that are red", "fruits that are yellow", "countries in South America", "countries in Africa", "countries in Asia",
        "ways to save energy at home", "tips for better sleep", "programming languages", "animals that live in the ocean",
        "animals that live in the desert", "things to pack for a camping trip", "healthy breakfast ideas", "musical instruments",
        "planets in the solar system", "benefits of regular exercise", "ways to reduce stress", "vegetables that grow underground",
        "famous painters", "board games for families", "uses for a paper clip", "kitchen tools", "reasons to learn to cook",
        "types of clouds", "sports played with a ball", "things that are cold", "birds that cannot fly", "words that rhyme with hat",
        "words that rhyme with sun", "words that rhyme with light", "ideas for a rainy day", "parts of a computer", "parts of a flower",
        "parts of the human body", "ways to be kind to a neighbour", "jobs that involve animals", "things you can recycle",
        "famous bridges", "mountains in Europe", "rivers in Asia", "oceans of the world", "kinds of pasta", "spices used in cooking",
        "winter sports", "summer activities", "things in a classroom", "farm animals", "pets that are easy to care for",
        "ways to get to work", "fun things to do at the beach", "snacks for a road trip", "shapes with straight sides",
        "units of length", "colours of the rainbow", "safety rules in a kitchen", "safety rules for swimming", "reasons to read books",
        "questions to ask at a job interview", "gifts for a teacher", "ways to practise a new language", "habits of healthy people",
        "insects that can fly", "trees that lose their leaves", "foods rich in protein", "dairy products", "tools a gardener uses",
        "things that need batteries", "sources of renewable energy", "symptoms of a cold", "ways to stay cool in summer",
        "ingredients for a salad", "ingredients for pancakes", "toys for a toddler", "apps people use every day",
        "things to do before a trip", "signs of spring", "animals that hibernate", "ways to make a room cosy"]
ACTIVITIES = ["cleaning a kitchen", "planning a birthday party", "moving house", "starting a vegetable garden", "preparing for an exam",
              "a day at the beach", "painting a room", "a weekend camping trip", "learning to drive", "organising a garage",
              "a job interview", "hosting a dinner", "washing a car", "a first day at a new job", "packing for a flight"]

def lists():
    out = []
    for _ in range(20 * N_PER_KIND['lists']):
        n, c = rng.choice([3, 4, 5, 6, 'three', 'four', 'five']), rng.choice(CATS)
        out.append(rng.choice([f"List {n} {c}.", f"Give me {n} {c}.", f"Name {n} {c}, one per line.",
                               f"Write a to-do list for {rng.choice(ACTIVITIES)}.", f"What are {n} {c}?",
                               f"Make a numbered list of {n} {c}.", f"Give {n} pros and {n} cons of {rng.choice(ACTIVITIES)}.",
                               f"Write a short shopping list for {rng.choice(['a picnic', 'a pasta dinner', 'a birthday cake', 'a week of breakfasts', 'a barbecue', 'a camping trip'])}."]))
    return out

THINGS = ["photosynthesis", "gravity", "a volcano", "an earthquake", "a rainbow", "electricity", "magnetism", "friction", "an atom",
          "a molecule", "a cell", "DNA", "the immune system", "a virus", "a bacterium", "an ecosystem", "a food chain", "erosion",
          "a glacier", "a hurricane", "a tornado", "a tsunami", "the water cycle", "evaporation", "condensation", "a solar eclipse",
          "a black hole", "a star", "a planet", "a comet", "the Milky Way", "democracy", "an election", "inflation", "a budget",
          "a bank", "interest on a loan", "a noun", "a verb", "an adjective", "a metaphor", "a poem", "a novel", "a museum",
          "an orchestra", "a recipe", "a thermometer", "a compass", "a microscope", "a telescope", "a battery", "a computer",
          "the internet", "an email", "a password", "an algorithm", "a spreadsheet", "a calendar", "a map", "a fossil", "a dinosaur",
          "a mammal", "a reptile", "an amphibian", "a desert", "a rainforest", "an island", "a peninsula", "a continent", "recycling",
          "climate change", "a habit", "vitamin C", "protein", "a muscle", "the brain", "the lungs", "the heart", "sleep", "a dream"]
COUNTRIES = ["France", "Japan", "Canada", "Italy", "Spain", "Germany", "Brazil", "Egypt", "India", "Kenya", "Mexico", "Norway",
             "Peru", "Chile", "Greece", "Turkey", "Vietnam", "Thailand", "Poland", "Sweden", "Portugal", "Argentina", "Morocco",
             "Ireland", "Australia", "China", "Nigeria", "Cuba", "Iceland", "Finland", "Austria", "Denmark", "Belgium", "Colombia",
             "Ghana", "Indonesia", "New Zealand", "South Korea", "Switzerland", "the Netherlands"]
PEOPLE = ["Albert Einstein", "Marie Curie", "Isaac Newton", "William Shakespeare", "Leonardo da Vinci", "Charles Darwin",
          "Ada Lovelace", "Galileo Galilei", "Nelson Mandela", "Mozart", "Cleopatra", "Napoleon", "Frida Kahlo", "Alan Turing",
          "Florence Nightingale", "Vincent van Gogh", "Thomas Edison", "Jane Austen", "Confucius", "Amelia Earhart"]
WHYS = ["the sky is blue", "leaves change colour in autumn", "the sea is salty", "we have seasons", "ice floats", "we need sleep",
        "birds fly south in winter", "the moon changes shape", "we sneeze", "bread goes stale", "cats purr", "bees make honey",
        "the ocean has waves", "we get goosebumps", "metal rusts", "plants need sunlight", "the sun sets in the west",
        "we have fingerprints", "onions make us cry", "popcorn pops", "snow is white", "dogs have wet noses", "we hiccup"]
ANIMALS = ["spider", "octopus", "elephant", "penguin", "bat", "snail", "owl", "giraffe", "dolphin", "ant", "frog", "camel",
           "kangaroo", "shark", "butterfly", "horse", "bee", "whale", "crocodile", "parrot"]

def an(w): return ('an ' if w[0] in 'aeiou' else 'a ') + w

def facts():
    r = rng.choice
    t = [lambda: f"What is {r(THINGS)}?", lambda: f"Explain {r(THINGS)} in one sentence.", lambda: f"How does {r(THINGS)} work?",
         lambda: f"What is the capital of {r(COUNTRIES)}?", lambda: f"What language is spoken in {r(COUNTRIES)}?",
         lambda: f"What is the currency of {r(COUNTRIES)}?", lambda: f"Who was {r(PEOPLE)}?", lambda: f"What is {r(PEOPLE)} famous for?",
         lambda: f"What is the reason that {r(WHYS)}?",
         lambda: f"Can you explain why {r(WHYS)}?", lambda: f"How many legs does {an(r(ANIMALS))} have?",
         lambda: f"Where does the {r(ANIMALS)} live?", lambda: f"What does {an(r(ANIMALS))} eat?",
         lambda: f"Tell me about the {r(ANIMALS)}.", lambda: f"What is the difference between {r(THINGS)} and {r(THINGS)}?",
         lambda: f"Describe {r(THINGS)} to a ten-year-old.", lambda: f"What are the main parts of {r(THINGS)}?",
         lambda: f"Give a short definition of {r(THINGS)}."]
    return [rng.choice(t)() for _ in range(20 * N_PER_KIND['facts'])]

TASKS = ["returns the sum of a list of numbers", "checks if a number is prime", "reverses a string", "counts the vowels in a string",
         "returns the largest of three numbers", "checks whether a word is a palindrome", "converts Celsius to Fahrenheit",
         "converts Fahrenheit to Celsius", "returns the even numbers from a list", "returns the odd numbers from a list",
         "computes the factorial of n", "computes the nth Fibonacci number", "removes duplicates from a list",
         "checks if a year is a leap year", "returns the average of a list", "finds the smallest number in a list",
         "sorts a list of names alphabetically", "joins a list of words with spaces", "capitalizes every word in a sentence",
         "returns True if a list is empty", "counts how many times each letter appears in a string", "returns the length of the longest word",
         "checks if a number is positive, negative or zero", "returns the last element of a list", "swaps two variables",
         "multiplies all the numbers in a list", "returns the first n square numbers", "counts the words in a sentence",
         "finds the maximum value in a dictionary", "merges two dictionaries", "checks if a string contains only digits",
         "returns a list of numbers from 1 to n", "prints a multiplication table", "converts minutes to hours and minutes",
         "checks if two lists have the same elements", "returns the difference between the largest and smallest number",
         "removes all spaces from a string", "returns every second element of a list", "rounds a number to two decimals",
         "checks if a number is divisible by 3 and 5", "returns the initials of a full name", "counts the uppercase letters in a string",
         "returns the sum of the squares of a list", "finds the position of the first vowel in a word", "adds two numbers"]
LANGS = ["Python", "Python", "Python", "JavaScript", "Java", "C", "Go", "Rust"]
CONCEPTS = ["a for loop", "a while loop", "a function", "a variable", "a list", "a dictionary", "a class", "an object", "recursion",
            "an if statement", "a string", "an integer", "a boolean", "an exception", "a module", "a tuple", "a set", "an API",
            "a database", "a bug", "version control", "a compiler", "an array", "a return value", "a comment in code"]

def code():
    r = rng.choice
    t = [lambda: f"Write a {r(LANGS)} function that {r(TASKS)}.", lambda: f"Write a Python function that {r(TASKS)}.",
         lambda: f"Explain what {r(CONCEPTS)} is in programming.", lambda: f"What is {r(CONCEPTS)} in Python? Give an example.",
         lambda: f"Write a Python loop that prints the numbers 1 to {rng.randint(5, 20)}.",
         lambda: f"Write a Python one-liner that {r(TASKS)}.", lambda: f"How do I write a function that {r(TASKS)}?",
         lambda: f"Write a SQL query that selects all rows from a table named {r(['users', 'orders', 'books', 'products', 'students'])}.",
         lambda: f"What is the difference between {r(CONCEPTS)} and {r(CONCEPTS)}?",
         lambda: f"Write a unit test for a function that {r(TASKS)}.", lambda: f"Explain step by step how to write code that {r(TASKS)}.",
         lambda: f"Fix this Python code: def add(a, b) return a + b"]
    return [rng.choice(t)() for _ in range(20 * N_PER_KIND['code'])]

GOALS = ["make new friends in a new city", "stay focused while studying", "learn to play the guitar", "be more productive at work",
         "sleep better", "eat healthier", "save money", "learn a new language", "get fit without a gym", "stop procrastinating",
         "be more patient", "improve my handwriting", "keep my plants alive", "make my mornings less rushed", "read more books",
         "feel less tired in the afternoon", "prepare for a marathon", "become a better cook", "spend less time on social media",
         "remember what I study", "write better emails", "relax after work", "make my home tidier", "talk to my boss about a raise"]
EVENTS = ["a job interview", "a school exam", "a first date", "a presentation at work", "a driving test", "moving abroad",
          "starting a new school", "a big game tomorrow", "meeting my partner's parents", "speaking in public"]
MSGS = ["a short welcome message for a new club member", "a tweet announcing a bake sale", "a thank-you note to a teacher",
        "a birthday message for a friend", "a short apology to a neighbour", "an invitation to a picnic", "a get-well-soon card",
        "a short poem about the rain", "a two-sentence story about a robot", "a riddle about a clock", "a slogan for a bakery",
        "a short speech for a wedding", "a friendly reminder about a meeting", "a product description for a water bottle",
        "a short bio for a gardening club", "a haiku about autumn", "a limerick about a cat", "a motivational quote for Monday"]

TOPICS = ["the rain", "a lost key", "friendship", "a busy market", "the first day of school", "a sleepy dog", "the mountains",
          "a birthday", "the ocean at night", "a new bicycle", "a garden", "a snowy morning", "a robot", "the city at night",
          "a cup of coffee", "an old library", "a long train journey", "the moon", "a small village", "a thunderstorm",
          "a lazy Sunday", "a lighthouse", "the first snow", "a forgotten umbrella", "a football match", "a kite", "a bakery"]
FORMS = ["a short poem", "a two-sentence story", "a haiku", "a limerick", "a riddle", "a short diary entry", "a four-line rhyme",
         "a one-paragraph story"]
FEELINGS = [("bored", "it is raining"), ("stressed", "I have too much work"), ("lonely", "my friends moved away"),
            ("tired", "I slept badly"), ("nervous", "I start a new job on Monday"), ("sad", "my holiday is over"),
            ("unmotivated", "my project is going slowly"), ("excited", "I am going on a trip"), ("worried", "my exam is next week")]
PLACES = ["Paris", "Rome", "Tokyo", "Lisbon", "New York", "the Alps", "a small beach town", "the countryside", "Barcelona",
          "London", "Kyoto", "Istanbul", "Cape Town", "Vancouver", "Prague"]

def chat():
    r = rng.choice
    t = [lambda: f"How can I {r(GOALS)}?", lambda: f"Tell me a fun fact about {r(ANIMALS)}s.",
         lambda: f"I am nervous about {r(EVENTS)}. What can I do?", lambda: f"Write {r(MSGS)}.",
         lambda: f"What is a good way to {r(GOALS)}?", lambda: f"Give me some advice: I want to {r(GOALS)}.",
         lambda: f"Hi! Can you help me {r(GOALS)}?", lambda: f"Tell me a joke about {r(ANIMALS)}s.",
         lambda: f"What should I say in {r(EVENTS)}?", lambda: f"Write {r(FORMS)} about {r(TOPICS)}.",
         lambda: (lambda f: f"I feel {f[0]} because {f[1]}. Any advice?")(r(FEELINGS)),
         lambda: f"Plan a {rng.randint(1, 5)}-day trip to {r(PLACES)}.", lambda: f"What should I pack for a trip to {r(PLACES)}?",
         lambda: f"Suggest a name for a {r(['cat', 'dog', 'bakery', 'band', 'coffee shop', 'book club', 'boat', 'robot'])}.", lambda: f"Can you recommend a hobby for someone who likes {r(['music', 'nature', 'puzzles', 'cooking', 'drawing', 'sport', 'history', 'science'])}?"]
    return [rng.choice(t)() for _ in range(20 * N_PER_KIND['chat'])]

def main():
    root = Path(__file__).resolve().parents[1] / 'dllm_nb' / 'assets' / 'prompts'
    seen = {json.loads(l)['prompt'].strip().lower() for f in ('instructions.jsonl', 'instructions_extra.jsonl')
            for l in (root / f).read_text().splitlines() if l.strip()}
    rows = []
    for kind, make in dict(arithmetic=arithmetic, rewriting=rewriting, lists=lists, facts=facts, code=code, chat=chat).items():
        n = 0
        for p in make():
            if p.strip().lower() in seen: continue
            seen.add(p.strip().lower()); rows.append(dict(prompt=p, kind=kind, split='train')); n += 1
            if n == N_PER_KIND[kind]: break
    rng.shuffle(rows)                     # kinds interleaved: any prefix (--limit) has every kind
    out = root / 'instructions_more.jsonl.gz'
    with gzip.GzipFile(out, 'wb', mtime=0) as f: f.write(''.join(json.dumps(r) + '\n' for r in rows).encode())
    by = {k: sum(r['kind'] == k for r in rows) for k in N_PER_KIND}
    print(f'{out}: {len(rows)} prompts, {by}, {out.stat().st_size} bytes')

if __name__ == '__main__':
    main()
