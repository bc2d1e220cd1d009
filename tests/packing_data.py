"A chat JSONL of ragged lengths for the packing tests (imported by test_train and test_packing)."
import json, random


def ragged_chats(path, n=48, seed=0, long_reply=25):
    "Chats whose examples range from ~6 to ~90 tokens (~2 tokens a word), so packing puts several in one row."
    rng, words = random.Random(seed), 'the cat sat on a mat and then ran far away from big dogs'.split()
    say = lambda k: ' '.join(rng.choice(words) for _ in range(k))
    rows = [dict(messages=[dict(role='user', content=say(rng.choice([1, 2, 3, 12]))),
                           dict(role='assistant', content=say(rng.choice([1, 2, 4, 6, long_reply])))]) for _ in range(n)]
    path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return path
