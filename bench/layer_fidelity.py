"""Backbone fidelity of the block-diffusion encoder (issue 53 item 4): `python bench/layer_fidelity.py`.

For tiny random configs of several transformers decoder families (vocab 64, 4 layers, hidden 64, window 4, 16 tokens,
seed 0), prints max |encoder clean-text logits - the backbone's own forward| two ways: `one mask` passes the encoder's
causal 4D mask to every layer (what dllm_nb did before issue 53), `per layer` is the model boundary today (each layer
type its own window, `03a_layer_masks`). Families without sdpa print `-`. Runs in a few seconds on a CPU."""
import os
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import common  # noqa: F401,E402  (exits unless `import dllm_nb` is this checkout's)
import torch  # noqa: E402
import transformers as T  # noqa: E402

from dllm_nb.block_diffusion import BlockDiffusionLM  # noqa: E402
from dllm_nb.masks import EncoderMask, build_encoder_mask  # noqa: E402
from dllm_nb.models import build_backbone, layer_windows, model_attention_mask  # noqa: E402

W, S = 4, 16
BASE = dict(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=128, tie_word_embeddings=False)
FAMILIES = dict(llama=(T.LlamaConfig, {}), mistral=(T.MistralConfig, dict(sliding_window=W)),
                gemma3_text=(T.Gemma3TextConfig, dict(sliding_window=W, layer_types=['sliding_attention', 'full_attention'] * 2)),
                gemma2=(T.Gemma2Config, dict(sliding_window=W)),
                qwen2=(T.Qwen2Config, dict(use_sliding_window=True, sliding_window=W, max_window_layers=2)),
                qwen3=(T.Qwen3Config, dict(use_sliding_window=True, sliding_window=W, max_window_layers=2)),
                cohere2=(T.Cohere2Config, dict(sliding_window=W)))


@torch.no_grad()
def gaps(bb) -> tuple[float, float]:
    "(one mask for every layer, per layer type): max |encoder logits - own forward|."
    ids = torch.randint(0, 64, (2, S), generator=torch.Generator().manual_seed(1))
    am = torch.ones_like(ids)
    own = bb(input_ids=ids).logits
    one = bb(input_ids=ids, attention_mask=model_attention_mask(build_encoder_mask(am), bb.config._attn_implementation),
             position_ids=torch.arange(S).expand_as(ids)).logits
    per = BlockDiffusionLM(bb, self_conditioning=False).eval().encode(ids, EncoderMask(am)).logits
    return (one - own).abs().max().item(), (per - own).abs().max().item()


def main():
    print(f"{'family':12s} {'layer windows':50s} {'attn':6s} {'one mask':>9s} {'per layer':>9s}")
    for name, (C, kw) in FAMILIES.items():
        for attn in ('sdpa', 'eager'):
            torch.manual_seed(0)
            try: bb = build_backbone(C(**BASE, **kw), attn).eval()
            except ValueError: print(f"{name:12s} {'':50s} {attn:6s} {'-':>9s} {'-':>9s}"); continue
            one, per = gaps(bb)
            print(f"{name:12s} {str(layer_windows(bb)):50s} {attn:6s} {one:9.3g} {per:9.3g}")


if __name__ == '__main__':
    main()
