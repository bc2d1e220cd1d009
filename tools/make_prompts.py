"""Writes the prompt sets under dllm_nb/assets/prompts/ (DFlash self-distillation and the speculative-decoding
benches): short varied instructions written for this project, in six kinds (arithmetic, rewriting, lists, facts,
code, chat). Each set is fixed by its seed; the files are what ships, so run this only to change a set.

    python tools/make_prompts.py shipped   # instructions.jsonl: 286 hand-written prompts, every 5th of each kind
                                           #   (by its order here) held out as split 'test' -- by construction, not a draw
    python tools/make_prompts.py extra     # instructions_extra.jsonl: ~550 more training prompts from templates
    python tools/make_prompts.py more      # instructions_more.jsonl.gz: ~5,700 more, gzipped so the package stays small
    python tools/make_prompts.py --check   # regenerate every set in memory; exit 1 unless each equals its file, byte for byte

`extra` and `more` are all `split: train` and never repeat a prompt of the sets before them (the held-out split of
`shipped` stays the benchmark), so write them in this order. Why they exist: a drafter trained on the 230 shipped
train prompts reaches tau 2.94 on them but 1.34 on held-out prompts, and resampled answers to the same prompts did
not help: it lacked prompt variety (`extra`). Trained on the 779 prompts of shipped:train + shipped:extra it still
reaches tau ~3 on its own training prompts but ~1.4 on held-out ones: variety, not steps (`more`).
"""
import argparse, gzip, io, json, random, sys
from dataclasses import dataclass
from pathlib import Path

PROMPTS = Path(__file__).resolve().parents[1] / 'dllm_nb' / 'assets' / 'prompts'
KINDS = ('arithmetic', 'rewriting', 'lists', 'facts', 'code', 'chat')


# ---------------------------------------------------------------- shipped: instructions.jsonl, written by hand (seed 27)
def shipped_arithmetic(rng):
    out = []
    for _ in range(18):
        a, b = rng.randint(10, 999), rng.randint(10, 999)
        out.append(f"What is {a} + {b}?")
    for _ in range(10):
        a, b = rng.randint(100, 999), rng.randint(10, 99)
        out.append(f"Compute {a} - {b}.")
    for _ in range(10):
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        out.append(f"What is {a} times {b}?")
    for _ in range(6):
        b = rng.randint(2, 12); a = b * rng.randint(2, 20)
        out.append(f"Divide {a} by {b}.")
    words = [
        "A shop sells pencils for {a} cents each. How much do {b} pencils cost?",
        "Tom has {a} apples and gives away {b}. How many are left?",
        "A train travels {a} km in {b} hours. What is its average speed?",
        "If a book has {a} pages and I read {b} pages a day, how many days will it take?",
        "What is {b} percent of {a}?",
        "A rectangle is {a} cm long and {b} cm wide. What is its area?",
        "Is {a} an even or an odd number?",
        "Round {a}.{b} to the nearest whole number.",
        "What is the square of {b}?",
        "Sara saved {a} dollars and spent {b}. How much does she have now?",
        "How many minutes are there in {b} hours?",
        "Convert {a} grams to kilograms.",
    ]
    for w in words:
        out.append(w.format(a=rng.randint(20, 400), b=rng.randint(2, 19)))
    out += ["What is half of 250?", "Explain how to add two fractions with different denominators.",
            "What is 15% of 80? Show your steps.", "Which is larger, 0.7 or 0.65?",
            "What is the next number in the sequence 2, 4, 8, 16?", "How many seconds are in a day?"]
    return out

SHIPPED_SENTENCES = [
    "The meeting was moved to Thursday because the manager was sick.",
    "I think we should go to the beach tomorrow if the weather is nice.",
    "Our team finished the project two days before the deadline.",
    "The cat knocked the glass off the table and ran away.",
    "Please send me the report as soon as you can.",
    "The new library downtown has a great collection of old maps.",
    "He forgot his umbrella, so he got wet on the way home.",
    "The restaurant was crowded, but the food was worth the wait.",
    "Learning a new language takes patience and daily practice.",
    "The children planted tomatoes in the garden last spring.",
    "My phone battery dies very quickly these days.",
    "The museum will be closed for repairs until next month.",
]
REWRITES = ["Rewrite this sentence in a more formal tone: {s}", "Make this sentence shorter: {s}",
            "Rewrite this sentence in the past tense: {s}", "Paraphrase the following sentence: {s}",
            "Fix the grammar and make it sound friendlier: {s}", "Translate this sentence into simple English for a child: {s}"]

def shipped_rewriting(rng):
    out = []
    for i, s in enumerate(SHIPPED_SENTENCES):
        for j in (i % 6, (i + 3) % 6, (i + 5) % 6):
            out.append(REWRITES[j].format(s=s))
    out += ["Correct the spelling: 'I recieved the pakage yesterday.'", "Turn this into a question: The shop opens at nine.",
            "Write the opposite of this sentence: The room is very bright.", "Summarize in one sentence: Bees collect nectar from flowers and turn it into honey, which they store in their hives for winter.",
            "Make this sentence more exciting: We went to the park.", "Rewrite in the passive voice: The chef cooked a delicious meal.",
            "Change this sentence to the future tense: She walks to school.", "Rewrite this headline as a full sentence: Storm closes schools across region.",
            "Simplify this sentence: Due to the fact that it was raining, we decided to remain indoors.",
            "Rewrite this email opening to sound polite: Give me the files now."]
    return out

LIST_TOPICS = ["fruits that are red", "countries in South America", "ways to save energy at home", "tips for better sleep",
               "common programming languages", "animals that live in the ocean", "things to pack for a camping trip",
               "healthy breakfast ideas", "musical instruments", "planets in the solar system", "benefits of regular exercise",
               "ways to reduce stress", "vegetables that grow underground", "famous painters", "board games for families",
               "uses for a paper clip", "colors of the rainbow", "kitchen tools", "reasons to learn to cook",
               "safety rules for riding a bike", "types of clouds", "sports played with a ball", "things that are cold",
               "mammals that can fly or glide", "ideas for a rainy day", "steps to make a cup of tea", "parts of a computer",
               "ways to be kind to a neighbor", "birds that cannot fly", "words that rhyme with cat"]

def shipped_lists(rng):
    out = []
    for i, t in enumerate(LIST_TOPICS):
        n = (3, 4, 5)[i % 3]
        out.append([f"List {n} {t}.", f"Give me {n} {t}.", f"Name {n} {t}, one per line."][i % 3])
    out += ["Write a short shopping list for a pasta dinner.", "List the days of the week in order.",
            "List the months that have 31 days.", "Give three pros and three cons of working from home.",
            "Write a to-do list for cleaning a bedroom.", "List the first five prime numbers.",
            "Name three primary colors.", "List four continents.", "Give five synonyms for 'happy'.",
            "List three things a plant needs to grow."]
    return out

def shipped_facts(rng):
    return ["What is the capital of France?", "What is the capital of Japan?", "What is the capital of Canada?",
            "Who wrote 'Romeo and Juliet'?", "What is the boiling point of water in Celsius?", "How many legs does a spider have?",
            "What gas do plants absorb from the air?", "What is the largest planet in our solar system?",
            "How many continents are there?", "What is the chemical symbol for gold?", "What is photosynthesis?",
            "Why is the sky blue?", "What causes the seasons on Earth?", "What is the tallest mountain in the world?",
            "Who painted the Mona Lisa?", "What is the longest river in Africa?", "How many days are in a leap year?",
            "What does DNA stand for?", "What is the freezing point of water in Fahrenheit?", "What is the speed of light?",
            "What is the smallest prime number?", "Which organ pumps blood through the body?", "What is a noun?",
            "What is the difference between weather and climate?", "How do bees make honey?", "What is gravity?",
            "What language is spoken in Brazil?", "What is the largest ocean on Earth?", "What is an atom?",
            "Why do leaves change color in autumn?", "What is the main ingredient in guacamole?", "What is a volcano?",
            "How many players are on a soccer team on the field?", "What is the currency of the United Kingdom?",
            "What does a thermometer measure?", "What is the opposite of 'ancient'?", "What is the Great Wall of China?",
            "How does a rainbow form?", "What is the capital of Australia?", "What do caterpillars turn into?",
            "What is the hardest natural substance?", "What is the water cycle?", "Who was Albert Einstein?",
            "What is an island?", "What is the role of the heart?", "What is a mammal?", "What is the Moon made of?",
            "How many hours are in a week?", "What is the largest desert in the world?", "What is electricity?",
            "What does a CPU do in a computer?", "What is the internet?", "What is a verb?", "Where do penguins live?",
            "What is recycling and why does it matter?", "What are the three states of matter?"]

def shipped_code(rng):
    return ["Write a Python function that returns the sum of a list of numbers.",
            "Write a Python function to check if a number is prime.", "Write a Python function that reverses a string.",
            "Write a Python function that counts the vowels in a string.", "Write a Python one-liner that squares every number in a list.",
            "Explain what a for loop does in Python.", "Write a Python function that returns the largest of three numbers.",
            "Write a Python function that checks whether a word is a palindrome.", "What is the difference between a list and a tuple in Python?",
            "Write a Python function that computes the factorial of n.", "Write a JavaScript function that adds two numbers.",
            "Write a SQL query that selects all rows from a table named users.", "What does the len() function do in Python?",
            "Write a Python function that converts Celsius to Fahrenheit.", "Write a Python function that returns the even numbers from a list.",
            "Explain what a variable is in programming.", "Write a Python function that computes the nth Fibonacci number.",
            "Write a Python function that removes duplicates from a list.", "How do you open and read a text file in Python?",
            "Write a Python function that counts how many times each word appears in a sentence.",
            "What is a dictionary in Python? Give an example.", "Write a bash command that lists all files in a folder.",
            "Write a Python function that checks if a year is a leap year.", "Explain what recursion is with a short example.",
            "Write a Python function that returns the average of a list.", "What is an if statement?",
            "Write a Python class for a simple bank account with deposit and withdraw methods.",
            "Write a Python function that sorts a list of names alphabetically.", "What does 'print(\"Hello\")' do?",
            "Write a Python function that finds the smallest number in a list.", "Explain what an API is in simple terms.",
            "Write a Python function that joins a list of words with spaces.", "What is a bug in a program?",
            "Write an HTML snippet for a button that says 'Click me'.", "Write a Python loop that prints the numbers 1 to 10.",
            "What is the difference between '=' and '==' in Python?", "Write a Python function that capitalizes every word in a sentence.",
            "Write a Python function that returns True if a list is empty.", "What is Git used for?",
            "Write a Python function that multiplies two matrices given as lists of lists.",
            "Write a CSS rule that makes all paragraphs blue.", "Write a Python function that returns the length of the longest word in a sentence."]

def shipped_chat(rng):
    return ["Hi! How are you today?", "Can you tell me a joke?", "I feel tired today. Any advice?",
            "What should I cook for dinner tonight?", "Tell me a fun fact about cats.", "Write a short poem about the sea.",
            "Give me a motivational quote.", "What is a good name for a pet goldfish?", "Help me write a birthday message for my friend.",
            "I am nervous about a job interview. What can I do?", "Describe a sunny day in two sentences.",
            "What is your favorite color and why?", "Write a haiku about autumn.", "Suggest a weekend activity for a family.",
            "How can I make new friends in a new city?", "Write a thank-you note to a teacher.", "Tell me a short story about a brave mouse.",
            "What are some good habits to start in the morning?", "Recommend a hobby for someone who likes being outdoors.",
            "How do I stay focused while studying?", "Write a two-line rhyme about coffee.", "Can you help me plan a picnic?",
            "Say something nice to cheer me up.", "Describe the taste of chocolate to someone who has never had it.",
            "What is a good way to learn to play the guitar?", "Write a short apology message for being late.",
            "Give me a riddle and its answer.", "What are three fun things to do in winter?", "Introduce yourself in one sentence.",
            "Write a short welcome message for a new club member.", "How do I politely decline an invitation?",
            "What should I name my new puppy?", "Write a limerick about a dog.", "Tell me something interesting about space.",
            "How can I be more productive at work?", "Write a short dialogue between a cat and a dog.",
            "What is a good gift for a friend who loves books?", "Give me a quick tip for saving money.",
            "Describe your ideal vacation.", "Write a tweet announcing a bake sale."]


# ---------------------------------------------------------------- extra: instructions_extra.jsonl, from templates (seed 2026)
EXTRA_COUNTRIES = ["Italy", "Spain", "Germany", "Brazil", "Egypt", "India", "Kenya", "Mexico", "Norway", "Peru", "Chile",
             "Greece", "Turkey", "Vietnam", "Thailand", "Poland", "Sweden", "Portugal", "Argentina", "Morocco", "Ireland",
             "Australia", "China", "Russia", "Nigeria", "Cuba", "Iceland", "Finland", "Austria", "Hungary"]
EXTRA_CONCEPTS = ["gravity", "photosynthesis", "democracy", "inflation", "evolution", "a black hole", "DNA", "an atom",
            "a volcano", "a rainbow", "friction", "a vaccine", "the internet", "a calendar", "erosion", "a tsunami",
            "an ecosystem", "a battery", "a telescope", "a compass", "an eclipse", "the water cycle", "a glacier",
            "a fossil", "a magnet", "climate", "a language", "a habit", "a budget", "an algorithm", "a database",
            "a planet", "a comet", "a desert", "an orchestra", "a museum", "a library", "a bridge", "a satellite", "a cloud"]
HOW = ["a refrigerator", "a bicycle", "an airplane", "a microwave oven", "a solar panel", "a lighthouse", "a camera",
       "a wind turbine", "a thermostat", "a zipper", "a submarine", "an elevator", "a clock", "a printer", "a lock and key",
       "a heart", "the lungs", "a rocket", "a search engine", "a radio"]
WHY = ["the sea is salty", "the moon changes shape", "we need sleep", "ice floats on water", "cats purr",
       "birds migrate", "bread rises", "we have seasons", "the sky turns red at sunset", "onions make us cry",
       "metal feels cold", "we yawn", "stars twinkle", "leaves are green", "we get hiccups", "dogs wag their tails",
       "the wind blows", "apples turn brown when cut", "we dream", "thunder follows lightning"]
CATEGORIES = ["vegetables that are green", "animals that live in the ocean", "musical instruments", "colors of the rainbow",
              "sports played with a ball", "countries in Europe", "kinds of trees", "things you find in a kitchen",
              "jobs in a hospital", "birds", "insects", "fruits that grow on trees", "famous scientists", "cities in Asia",
              "types of weather", "things to pack for a beach trip", "breakfast foods", "winter clothes", "farm animals",
              "parts of a car", "shapes", "languages spoken in Africa", "desserts", "school subjects", "card games",
              "indoor plants", "rivers", "mammals that can swim", "hobbies that cost little", "tools in a toolbox",
              "kinds of cheese", "dog breeds", "things that use electricity", "flowers", "ways to travel", "space objects"]
TIPS = ["saving water", "sleeping better", "writing an essay", "learning to cook", "running a first 5 km", "keeping a plant alive",
        "speaking in public", "packing a suitcase", "studying for an exam", "staying warm in winter", "reading more books",
        "organising a desk", "taking better photos", "eating more vegetables", "learning to swim", "staying calm in traffic",
        "writing clear emails", "saving for a trip", "training a puppy", "drinking more water"]
EXTRA_SENTENCES = ["The bus was late again, so everyone missed the first lesson.",
             "My grandmother bakes the best apple pie in the whole town.",
             "We are going to paint the kitchen yellow next weekend.",
             "The scientists found a new kind of frog in the forest.",
             "She practises the piano every evening after dinner.",
             "The storm knocked down several trees along the river.",
             "Our team won the match even though we played with ten players.",
             "The library is open until eight o'clock on weekdays.",
             "He bought a used car because it was much cheaper than a new one.",
             "The children built a huge sandcastle near the water.",
             "I will call you as soon as the package arrives.",
             "The restaurant was so busy that we waited an hour for a table.",
             "They moved to the countryside to have a quieter life.",
             "The new phone has a bigger screen and a longer battery life.",
             "Please remember to turn off the lights when you leave the room.",
             "The concert was cancelled because the singer was ill.",
             "Many people visit the old castle every summer.",
             "My brother is learning Spanish with an app on his phone.",
             "The farmer wakes up before sunrise to feed the animals.",
             "We forgot the map, so we asked a stranger for directions.",
             "The price of coffee has gone up a lot this year.",
             "Our neighbour plays loud music late at night.",
             "The teacher explained the lesson twice because nobody understood it.",
             "The garden looks beautiful now that the roses are blooming.",
             "I can't find my keys anywhere in the house."]
REWRITE = ["Paraphrase the following sentence: {s}", "Rewrite this sentence in the past tense: {s}",
           "Make this sentence more formal: {s}", "Simplify this sentence: {s}", "Rewrite this sentence as a question: {s}",
           "Translate this sentence into simple English for a child: {s}", "Make this sentence shorter: {s}",
           "Rewrite this sentence in the future tense: {s}"]
CODE = ["returns the largest number in a list", "removes duplicates from a list", "checks if a string is a palindrome",
        "counts the vowels in a string", "converts Celsius to Fahrenheit", "returns the n-th Fibonacci number",
        "sorts a list of words by length", "reverses the words in a sentence", "checks if a year is a leap year",
        "returns the sum of the digits of a number", "merges two sorted lists", "finds the second largest number in a list",
        "capitalises the first letter of every word", "returns the product of a list of numbers", "counts the words in a text",
        "checks if two strings are anagrams", "returns the common elements of two lists", "flattens a list of lists",
        "converts a list of strings to upper case", "returns the median of a list", "checks if a list is sorted",
        "returns the index of an item in a list or -1", "splits a list into chunks of size n", "computes the greatest common divisor",
        "returns the squares of the odd numbers in a list", "counts the lines in a text file", "reads a CSV file into a list of rows",
        "returns the keys of a dictionary sorted by value", "replaces every space in a string with an underscore",
        "returns the number of days between two dates"]
EXTRA_GOALS = ["get better at drawing", "wake up earlier", "learn a new language", "make my room tidier", "spend less time on my phone",
         "cook healthier meals", "be a better listener", "start running", "keep in touch with old friends", "plan a small party",
         "feel less stressed before exams", "grow tomatoes on a balcony", "write a good cover letter", "save money on groceries",
         "choose a good book to read", "be more confident", "learn to juggle", "remember names better", "make my mornings calmer",
         "help my neighbours"]
WRITES = ["a short poem", "a two-sentence story", "a friendly text message", "a short speech", "a riddle", "a slogan"]
EXTRA_TOPICS = ["the rain", "a lost key", "friendship", "a busy market", "the first day of school", "a sleepy dog", "the mountains",
          "a birthday", "the ocean at night", "a new bicycle", "a garden", "a snowy morning", "a robot", "the city at night"]

def extra_arithmetic(rng):
    out = []
    for _ in range(40): out.append(f"What is {rng.randint(10, 999)} + {rng.randint(10, 999)}?")
    for _ in range(25): out.append(f"Compute {rng.randint(100, 999)} - {rng.randint(10, 99)}.")
    for _ in range(25): out.append(f"What is {rng.randint(2, 30)} times {rng.randint(2, 30)}?")
    for _ in range(15):
        b = rng.randint(2, 12); out.append(f"Divide {b * rng.randint(2, 20)} by {b}.")
    words = ["A bakery sells {b} cakes a day. How many does it sell in {c} days?",
             "A box holds {b} eggs. How many boxes do {a} eggs fill?", "What is half of {a}?",
             "A car uses {b} litres of fuel per 100 km. How much does it use for {a} km?",
             "There are {a} students and {b} buses. How many students ride each bus?",
             "What is {a} divided by {b}, rounded to one decimal place?", "Is {a} a prime number?",
             "How many seconds are there in {b} minutes?", "What is {b} squared plus {c}?",
             "A ticket costs {b} dollars. How much do {c} tickets cost?"]
    for _ in range(4):
        for w in words: out.append(w.format(a=rng.randint(20, 400), b=rng.randint(2, 19), c=rng.randint(2, 9)))
    return out

def extra_facts(rng):
    out = [f"What is the capital of {c}?" for c in EXTRA_COUNTRIES]
    out += [f"What is {c}?" for c in EXTRA_CONCEPTS] + [f"Explain {c} in one sentence." for c in EXTRA_CONCEPTS[::2]]
    out += [f"How does {h} work?" for h in HOW] + [f"Can you explain why {w}?" for w in WHY]
    out += [f"What language is spoken in {c}?" for c in EXTRA_COUNTRIES[::2]]
    return out

def extra_lists(rng):
    out = []
    for c in CATEGORIES:
        n = rng.randint(3, 5)
        out.append(rng.choice([f"List {n} {c}.", f"Name {n} {c}, one per line.", f"Give me {n} {c}."]))
    out += [f"Give me {rng.randint(3, 5)} tips for {t}." for t in TIPS]
    out += [f"List the steps to {g}." for g in EXTRA_GOALS[::2]]
    return out

def extra_rewriting(rng):
    return [t.format(s=s) for i, s in enumerate(EXTRA_SENTENCES) for t in rng.sample(REWRITE, 4)]

def extra_code(rng):
    out = [f"Write a Python function that {t}." for t in CODE]
    out += [f"Explain how to write a Python function that {t}." for t in CODE[::3]]
    out += [f"Write a JavaScript function that {t}." for t in CODE[1::3]]
    return out

def extra_chat(rng):
    out = [f"How can I {g}?" for g in EXTRA_GOALS]
    out += [f"Write {w} about {t}." for t in EXTRA_TOPICS for w in rng.sample(WRITES, 2)]
    out += [f"What do you think about {t}?" for t in EXTRA_TOPICS[::2]]
    return out


# ---------------------------------------------------------------- more: instructions_more.jsonl.gz, from templates (seed 20261203)
N_PER_KIND = dict(arithmetic=1300, rewriting=1100, lists=900, facts=1100, code=800, chat=800)

NAMES = ["Tom", "Sara", "Ali", "Mia", "Leo", "Nina", "Omar", "Emma", "Raj", "Lucy", "Ben", "Ana", "Kofi", "Yuki", "Ivan", "Zoe"]
ITEMS = ["apples", "pencils", "stickers", "marbles", "cookies", "books", "oranges", "stamps", "cards", "eggs", "balloons", "shells"]

def more_arithmetic(rng):
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

def more_rewriting(rng):
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

def more_lists(rng):
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
MORE_COUNTRIES = ["France", "Japan", "Canada", "Italy", "Spain", "Germany", "Brazil", "Egypt", "India", "Kenya", "Mexico", "Norway",
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

def more_facts(rng):
    r = rng.choice
    t = [lambda: f"What is {r(THINGS)}?", lambda: f"Explain {r(THINGS)} in one sentence.", lambda: f"How does {r(THINGS)} work?",
         lambda: f"What is the capital of {r(MORE_COUNTRIES)}?", lambda: f"What language is spoken in {r(MORE_COUNTRIES)}?",
         lambda: f"What is the currency of {r(MORE_COUNTRIES)}?", lambda: f"Who was {r(PEOPLE)}?", lambda: f"What is {r(PEOPLE)} famous for?",
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
MORE_CONCEPTS = ["a for loop", "a while loop", "a function", "a variable", "a list", "a dictionary", "a class", "an object", "recursion",
            "an if statement", "a string", "an integer", "a boolean", "an exception", "a module", "a tuple", "a set", "an API",
            "a database", "a bug", "version control", "a compiler", "an array", "a return value", "a comment in code"]

def more_code(rng):
    r = rng.choice
    t = [lambda: f"Write a {r(LANGS)} function that {r(TASKS)}.", lambda: f"Write a Python function that {r(TASKS)}.",
         lambda: f"Explain what {r(MORE_CONCEPTS)} is in programming.", lambda: f"What is {r(MORE_CONCEPTS)} in Python? Give an example.",
         lambda: f"Write a Python loop that prints the numbers 1 to {rng.randint(5, 20)}.",
         lambda: f"Write a Python one-liner that {r(TASKS)}.", lambda: f"How do I write a function that {r(TASKS)}?",
         lambda: f"Write a SQL query that selects all rows from a table named {r(['users', 'orders', 'books', 'products', 'students'])}.",
         lambda: f"What is the difference between {r(MORE_CONCEPTS)} and {r(MORE_CONCEPTS)}?",
         lambda: f"Write a unit test for a function that {r(TASKS)}.", lambda: f"Explain step by step how to write code that {r(TASKS)}.",
         lambda: f"Fix this Python code: def add(a, b) return a + b"]
    return [rng.choice(t)() for _ in range(20 * N_PER_KIND['code'])]

MORE_GOALS = ["make new friends in a new city", "stay focused while studying", "learn to play the guitar", "be more productive at work",
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

MORE_TOPICS = EXTRA_TOPICS + [
          "a cup of coffee", "an old library", "a long train journey", "the moon", "a small village", "a thunderstorm",
          "a lazy Sunday", "a lighthouse", "the first snow", "a forgotten umbrella", "a football match", "a kite", "a bakery"]
FORMS = ["a short poem", "a two-sentence story", "a haiku", "a limerick", "a riddle", "a short diary entry", "a four-line rhyme",
         "a one-paragraph story"]
FEELINGS = [("bored", "it is raining"), ("stressed", "I have too much work"), ("lonely", "my friends moved away"),
            ("tired", "I slept badly"), ("nervous", "I start a new job on Monday"), ("sad", "my holiday is over"),
            ("unmotivated", "my project is going slowly"), ("excited", "I am going on a trip"), ("worried", "my exam is next week")]
PLACES = ["Paris", "Rome", "Tokyo", "Lisbon", "New York", "the Alps", "a small beach town", "the countryside", "Barcelona",
          "London", "Kyoto", "Istanbul", "Cape Town", "Vancouver", "Prague"]

def more_chat(rng):
    r = rng.choice
    t = [lambda: f"How can I {r(MORE_GOALS)}?", lambda: f"Tell me a fun fact about {r(ANIMALS)}s.",
         lambda: f"I am nervous about {r(EVENTS)}. What can I do?", lambda: f"Write {r(MSGS)}.",
         lambda: f"What is a good way to {r(MORE_GOALS)}?", lambda: f"Give me some advice: I want to {r(MORE_GOALS)}.",
         lambda: f"Hi! Can you help me {r(MORE_GOALS)}?", lambda: f"Tell me a joke about {r(ANIMALS)}s.",
         lambda: f"What should I say in {r(EVENTS)}?", lambda: f"Write {r(FORMS)} about {r(MORE_TOPICS)}.",
         lambda: (lambda f: f"I feel {f[0]} because {f[1]}. Any advice?")(r(FEELINGS)),
         lambda: f"Plan a {rng.randint(1, 5)}-day trip to {r(PLACES)}.", lambda: f"What should I pack for a trip to {r(PLACES)}?",
         lambda: f"Suggest a name for a {r(['cat', 'dog', 'bakery', 'band', 'coffee shop', 'book club', 'boat', 'robot'])}.", lambda: f"Can you recommend a hobby for someone who likes {r(['music', 'nature', 'puzzles', 'cooking', 'drawing', 'sport', 'history', 'science'])}?"]
    return [rng.choice(t)() for _ in range(20 * N_PER_KIND['chat'])]


# ---------------------------------------------------------------- one writer for the three sets
@dataclass(frozen=True)
class PromptSet:
    file: str                                 # under dllm_nb/assets/prompts/
    seed: int                                 # one random.Random(seed) feeds every kind, in KINDS order
    after: tuple[str, ...] = ()               # sets whose prompts this one must not repeat (skipped, never an error)
    held_out: bool = False                    # every 5th prompt of each kind is split 'test'; a repeat is an error
    per_kind: dict | None = None              # keep at most this many prompts per kind, then shuffle the rows

SETS = dict(shipped=PromptSet('instructions.jsonl', 27, held_out=True),
            extra=PromptSet('instructions_extra.jsonl', 2026, after=('shipped',)),
            more=PromptSet('instructions_more.jsonl.gz', 20261203, after=('shipped', 'extra'), per_kind=N_PER_KIND))


def read_prompts(path: Path) -> set[str]:
    "The prompts of a written set, lower-cased (what `seen` compares)."
    raw = path.read_bytes()
    if path.suffix == '.gz': raw = gzip.decompress(raw)
    return {json.loads(l)['prompt'].strip().lower() for l in raw.decode().splitlines() if l.strip()}


def rows_of(name: str, seen: set[str]) -> list[dict]:
    "Every row of set `name`: its kinds drawn in order from the set's own generator, repeats of `seen` skipped."
    ps, rng = SETS[name], random.Random(SETS[name].seed)
    kinds = {k: globals()[f'{name}_{k}'](rng) for k in KINDS}
    rows = []
    for kind, prompts in kinds.items():
        kept = 0
        for i, p in enumerate(prompts):
            key = p.strip().lower()
            if key in seen:
                if ps.held_out: raise SystemExit(f'duplicate prompt: {p!r}')
                continue                          # random arithmetic may repeat; never a prompt of an earlier set
            seen.add(key); kept += 1
            rows.append(dict(prompt=p, kind=kind, split='test' if ps.held_out and i % 5 == 4 else 'train'))
            if ps.per_kind and kept == ps.per_kind[kind]: break
    if ps.per_kind: rng.shuffle(rows)         # kinds interleaved: any prefix (--limit) has every kind
    return rows


def encode(rows: list[dict], file: str) -> bytes:
    "The file's bytes: JSON lines, gzipped (header without a time stamp) for a `.gz` name."
    raw = ''.join(json.dumps(r) + '\n' for r in rows).encode()
    if not file.endswith('.gz'): return raw
    buf = io.BytesIO()
    with gzip.GzipFile(file, 'wb', fileobj=buf, mtime=0) as f: f.write(raw)
    return buf.getvalue()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('sets', nargs='*', help=f'which sets to write, in this order: {" ".join(SETS)}')
    ap.add_argument('--out', type=Path, default=PROMPTS, help='folder to write into (default: the package\'s)')
    ap.add_argument('--check', action='store_true', help='write nothing; exit 1 unless every set equals its file in --out')
    args = ap.parse_args(argv)
    unknown = [s for s in args.sets if s not in SETS]
    if unknown or not (args.sets or args.check):
        ap.error(f'name the sets to write ({", ".join(SETS)}) or pass --check; unknown: {" ".join(unknown) or "-"}')
    bad = []
    for name in (SETS if args.check else args.sets):
        ps, path = SETS[name], args.out / SETS[name].file
        seen = set().union(*(read_prompts(args.out / SETS[a].file) for a in ps.after))
        rows = rows_of(name, seen)
        data = encode(rows, ps.file)
        by = {k: sum(r['kind'] == k for r in rows) for k in KINDS}
        held = f' ({sum(r["split"] == "test" for r in rows)} held out)' if ps.held_out else ''
        if args.check:
            same = path.exists() and path.read_bytes() == data
            if not same: bad.append(str(path))
            print(f'{path}: {"equals" if same else "DIFFERS from"} the {len(rows)} prompts of set {name!r}')
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f'{path}: {len(rows)} prompts{held}, {by}, {len(data)} bytes')
    if bad: sys.exit(f'differs from its generator: {" ".join(bad)}')


if __name__ == '__main__':
    main()
