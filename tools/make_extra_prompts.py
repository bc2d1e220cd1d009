"""Writes dllm_nb/assets/prompts/instructions_extra.jsonl: more training prompts for DFlash self-distillation, composed
from templates and fillers written for this project, every one `split: train`, none equal to a prompt of the shipped
set (instructions.jsonl, whose held-out split stays the benchmark). A drafter trained on the 230 shipped train prompts
reaches tau 2.94 on them but 1.34 on held-out prompts; resampled answers to the same prompts did not help, so what it
lacks is prompt variety. Run once; the JSONL is what ships.
    python tools/make_extra_prompts.py
"""
import json, random
from pathlib import Path

rng = random.Random(2026)
COUNTRIES = ["Italy", "Spain", "Germany", "Brazil", "Egypt", "India", "Kenya", "Mexico", "Norway", "Peru", "Chile",
             "Greece", "Turkey", "Vietnam", "Thailand", "Poland", "Sweden", "Portugal", "Argentina", "Morocco", "Ireland",
             "Australia", "China", "Russia", "Nigeria", "Cuba", "Iceland", "Finland", "Austria", "Hungary"]
CONCEPTS = ["gravity", "photosynthesis", "democracy", "inflation", "evolution", "a black hole", "DNA", "an atom",
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
SENTENCES = ["The bus was late again, so everyone missed the first lesson.",
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
GOALS = ["get better at drawing", "wake up earlier", "learn a new language", "make my room tidier", "spend less time on my phone",
         "cook healthier meals", "be a better listener", "start running", "keep in touch with old friends", "plan a small party",
         "feel less stressed before exams", "grow tomatoes on a balcony", "write a good cover letter", "save money on groceries",
         "choose a good book to read", "be more confident", "learn to juggle", "remember names better", "make my mornings calmer",
         "help my neighbours"]
WRITES = ["a short poem", "a two-sentence story", "a friendly text message", "a short speech", "a riddle", "a slogan"]
TOPICS = ["the rain", "a lost key", "friendship", "a busy market", "the first day of school", "a sleepy dog", "the mountains",
          "a birthday", "the ocean at night", "a new bicycle", "a garden", "a snowy morning", "a robot", "the city at night"]

def arithmetic():
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

def facts():
    out = [f"What is the capital of {c}?" for c in COUNTRIES]
    out += [f"What is {c}?" for c in CONCEPTS] + [f"Explain {c} in one sentence." for c in CONCEPTS[::2]]
    out += [f"How does {h} work?" for h in HOW] + [f"Can you explain why {w}?" for w in WHY]
    out += [f"What language is spoken in {c}?" for c in COUNTRIES[::2]]
    return out

def lists():
    out = []
    for c in CATEGORIES:
        n = rng.randint(3, 5)
        out.append(rng.choice([f"List {n} {c}.", f"Name {n} {c}, one per line.", f"Give me {n} {c}."]))
    out += [f"Give me {rng.randint(3, 5)} tips for {t}." for t in TIPS]
    out += [f"List the steps to {g}." for g in GOALS[::2]]
    return out

def rewriting():
    return [t.format(s=s) for i, s in enumerate(SENTENCES) for t in rng.sample(REWRITE, 4)]

def code():
    out = [f"Write a Python function that {t}." for t in CODE]
    out += [f"Explain how to write a Python function that {t}." for t in CODE[::3]]
    out += [f"Write a JavaScript function that {t}." for t in CODE[1::3]]
    return out

def chat():
    out = [f"How can I {g}?" for g in GOALS]
    out += [f"Write {w} about {t}." for t in TOPICS for w in rng.sample(WRITES, 2)]
    out += [f"What do you think about {t}?" for t in TOPICS[::2]]
    return out

def main():
    root = Path(__file__).resolve().parents[1] / 'dllm_nb' / 'assets' / 'prompts'
    shipped = {json.loads(l)['prompt'].strip().lower() for l in (root / 'instructions.jsonl').read_text().splitlines() if l.strip()}
    kinds = dict(arithmetic=arithmetic(), rewriting=rewriting(), lists=lists(), facts=facts(), code=code(), chat=chat())
    rows, seen = [], set(shipped)
    for kind, prompts in kinds.items():
        for p in prompts:
            if p.strip().lower() in seen: continue            # random arithmetic may repeat; never a shipped prompt
            seen.add(p.strip().lower())
            rows.append(dict(prompt=p, kind=kind, split='train'))
    out = root / 'instructions_extra.jsonl'
    out.write_text(''.join(json.dumps(r) + '\n' for r in rows))
    by = {k: sum(r['kind'] == k for r in rows) for k in kinds}
    print(f'{out}: {len(rows)} prompts, {by}, {out.stat().st_size} bytes')

if __name__ == '__main__':
    main()
