"""Writes dllm_nb/assets/prompts/instructions.jsonl: short varied instructions written for this project (DFlash
self-distillation and speculative-decoding benches). Run once; the JSONL is what ships. Every 5th prompt of each kind
(by its order here) is held out: `split` is 'test', else 'train' -- fixed by construction, not by a random draw.
    python tools/make_prompts.py
"""
import json, random
from pathlib import Path

rng = random.Random(27)

def arithmetic():
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

SENTENCES = [
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

def rewriting():
    out = []
    for i, s in enumerate(SENTENCES):
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

def lists():
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

def facts():
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

def code():
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

def chat():
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

def main():
    kinds = dict(arithmetic=arithmetic(), rewriting=rewriting(), lists=lists(), facts=facts(), code=code(), chat=chat())
    rows, seen = [], set()
    for kind, prompts in kinds.items():
        for i, p in enumerate(prompts):
            if p.lower() in seen: raise SystemExit(f'duplicate prompt: {p!r}')
            seen.add(p.lower())
            rows.append(dict(prompt=p, kind=kind, split='test' if i % 5 == 4 else 'train'))
    out = Path(__file__).resolve().parents[1] / 'dllm_nb' / 'assets' / 'prompts' / 'instructions.jsonl'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(''.join(json.dumps(r) + '\n' for r in rows))
    by = {k: sum(r['kind'] == k for r in rows) for k in kinds}
    print(f'{out}: {len(rows)} prompts ({sum(r["split"] == "test" for r in rows)} held out), {by}, {out.stat().st_size} bytes')

if __name__ == '__main__':
    main()
