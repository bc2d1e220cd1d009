"""A training run over several lives, each ended by a fault on purpose: SIGTERM (a preemption) or SIGKILL (a crash),
delivered as a given step starts or inside the checkpoint write of a step.

    python tests/scripts/lives.py plan PLAN.json REPORT.json
        PLAN = {"runs": [{"world": 1 or 2, "args": [train args], "broken": false, "lives": [{"faults": [FAULT, ...]}, ...]}]}
        Each life forks `world` fresh processes from this one (imported once) that run `dllm_nb.train.main(args)`; two form
        a gloo group from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, as torchrun's workers do. REPORT = per run, per life:
        each rank's exit status, and rank 0's `error:`/`interrupted` line (or its last stderr line).
        "broken": the resume forgets the learning-rate schedule and does not cut metrics.jsonl back (the positive control).
    torchrun --max-restarts=N ... tests/scripts/lives.py worker FAULTS_JSON train args...
        One torchrun worker; each FAULT also names the `restart` (TORCHELASTIC_RESTART_COUNT) it fires in.

    FAULT = {"rank": r, "step": s, "signal": "SIGTERM" | "SIGKILL", "where": "start" | "save"}
        start: as step s starts (the signal arrives mid-step); save: inside the checkpoint write of step s, after its last
        file (the trainer state) is written and before the folder is renamed to ckpt-NNNNNNN (rank 0 writes that file).

A forked life skips the interpreter start and the imports (about 6 s of CPU a process here); it keeps nothing of a
previous life: every life starts from this parent, which imported the package and never trained.
"""
import json, os, signal, socket, sys, traceback
os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
import matplotlib.pyplot                                               # noqa: F401  (each final life draws its loss curve)
import torch
import dllm_nb.checkpoint as checkpoint
import dllm_nb.trainer as trainer
from dllm_nb.train import main


def install(fault: dict) -> None:
    "Arrange for this process to receive `fault['signal']` at `fault['where']` of step `fault['step']`."
    sig, step = getattr(signal, fault['signal']), fault['step']
    fire = lambda: os.kill(os.getpid(), sig)
    if fault['where'] == 'start':
        real_step = trainer.Trainer.fit_step
        def fit_step(self, s, *a, **k):
            if s + 1 == step: fire()
            return real_step(self, s, *a, **k)
        trainer.Trainer.fit_step = fit_step
    else:
        real_write = checkpoint.write_trainer_state
        def write_trainer_state(ckpt, state):
            real_write(ckpt, state)
            if state['step'] == step: fire()
        checkpoint.write_trainer_state = write_trainer_state


def break_resume() -> None:
    "The positive control: a resume that restores no scheduler state and never cuts metrics.jsonl back."
    torch.optim.lr_scheduler.LambdaLR.load_state_dict = lambda self, state: None
    trainer.trim_metrics = lambda run_dir, start: None


def child(rank: int, world: int, port: int, args: list, faults: list, broken: bool, log: str) -> None:
    code = 1
    try:
        if world > 1:
            os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                              MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
        fd = os.open(f'{log}.rank{rank}', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1); os.dup2(fd, 2)
        for f in faults:
            if f['rank'] == rank: install(f)
        if broken: break_resume()
        code = main(args)
    except BaseException: traceback.print_exc()
    finally:
        sys.stdout.flush(); sys.stderr.flush(); os._exit(code)


def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def said(log: str) -> str:
    "Rank 0's `error:` or `interrupted` line, else its last line."
    lines = [l for l in open(log).read().splitlines() if l.strip()]
    return next((l for l in lines if l.startswith(('error:', 'interrupted'))), lines[-1] if lines else '')


def life(run: dict, faults: list, log: str) -> dict:
    port, pids = free_port(), []
    sys.stdout.flush(); sys.stderr.flush()
    for rank in range(run['world']):
        pid = os.fork()
        if pid == 0: child(rank, run['world'], port, run['args'], faults, run.get('broken', False), log)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    return dict(codes=codes, said=said(f'{log}.rank0'))


def plan(plan_file: str, report_file: str) -> None:
    runs = json.load(open(plan_file))['runs']
    report = [[life(r, l.get('faults', []), f"{report_file}.run{i}.life{j}") for j, l in enumerate(r['lives'])]
              for i, r in enumerate(runs)]
    json.dump(report, open(report_file, 'w'), indent=1)


def worker(faults_json: str, args: list) -> None:
    from dllm_nb.distributed import exit_process
    restart, rank = int(os.environ.get('TORCHELASTIC_RESTART_COUNT', 0)), int(os.environ['RANK'])
    for f in json.loads(faults_json):
        if f['restart'] == restart and f['rank'] == rank: install(f)
    exit_process(main(args))


if __name__ == '__main__':
    if sys.argv[1] == 'plan': plan(*sys.argv[2:4])
    else: worker(sys.argv[2], sys.argv[3:])
