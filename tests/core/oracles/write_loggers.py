"""Runs as W&B and MLflow write them, with the real packages (tests/core/tst_loggers.cpp reads them back).

usage: write_loggers.py wandb OUT      three offline W&B runs under OUT/wandb (two of one name)
       write_loggers.py mlflow OUT     MLflow's SQLite store OUT/mlflow.db and file store OUT/mlruns
       write_loggers.py more OUT       ten more steps of the SQLite store's run fp8-mx (a run still logging)

Values follow formulas the test knows: loss(step) = 5 - 0.001 * step + offset; grad norm 1 + step / 1000, NaN at
step 30 and +inf at step 40 (W&B: the key "spiky"; MLflow: "grad_norm"). Exit status 3: a package is missing.
"""
import math
import os
import sys

kind, out = sys.argv[1], sys.argv[2]


def loss(step, offset):
    return 5.0 - 0.001 * step + offset


def spiky(step):
    return float('nan') if step == 30 else float('inf') if step == 40 else 1.0 + step / 1000.0


def megatron_line(step, total, value):
    return (f" [2026-12-05 10:00:00] iteration {step:8d}/{total:8d} | consumed samples: {step * 8:12d} | "
            f"elapsed time per iteration (ms): 100.0 | learning rate: 3.000000E-04 | global batch size:     8 | "
            f"lm loss: {value:.6E} | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |")


def write_wandb():
    try:
        import wandb
    except Exception:
        sys.exit(3)
    runs = [('llama-fp8', 'fp8aaaa1', 'fp8', 0.01, 300, True),
            ('llama-bf16', 'bf16aaa1', 'bf16', 0.0, 50, False),
            ('llama-bf16', 'bf16bbb2', 'bf16', 0.02, 50, False)]
    for name, run_id, precision, offset, n, extras in runs:
        config = {'precision': precision, 'optimizer': {'lr': 3e-4, 'betas': [0.9, 0.95]}, 'seq_length': 4096}
        if precision == 'fp8':
            config['fp8_recipe'] = 'mxfp8'
        r = wandb.init(mode='offline', dir=out, project='fp8scope', name=name, id=run_id, group='llama-sweep',
                       config=config)
        if extras:
            print('------------------------ arguments ------------------------', flush=True)
            print('  fp8_format ...................................... hybrid', flush=True)
            print('  transformer_impl ................................ transformer_engine', flush=True)
            print('-------------------- end of arguments ---------------------', flush=True)
        for i in range(n):
            step = 10 * i
            print(megatron_line(step, 10 * n, loss(step, offset)), flush=True)
            r.log({'train/loss': loss(step, offset), 'grad': {'norm': 1.0 + step / 1000.0}, 'spiky': spiky(step),
                   'note': 'text'}, step=step)
        if extras:
            r.log({'samples': wandb.Table(columns=['a'], data=[[1]])}, step=10 * n)
        r.summary['eval/accuracy'] = 0.5 + offset
        r.finish()


def write_mlflow():
    try:
        import mlflow
    except Exception:
        sys.exit(3)
    for uri, experiment, names in ((f"sqlite:///{os.path.join(out, 'mlflow.db')}", 'llama', ('fp8-mx', 'bf16-ref')),
                                   (f"file://{os.path.join(out, 'mlruns')}", 'llama-fs', ('fs-fp8', 'fs-bf16'))):
        if uri.startswith('file:'):
            os.environ['MLFLOW_ALLOW_FILE_STORE'] = 'true'
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(experiment)
        for name, offset in zip(names, (0.01, 0.0)):
            precision = 'bf16' if 'bf16' in name else 'fp8'
            with mlflow.start_run(run_name=name):
                mlflow.log_params({'precision': precision, 'lr': 3e-4, 'seq_length': 4096})
                mlflow.set_tag('team', 'numerics')
                mlflow.set_tag('mlflow.note.content', f'{name} notes')
                for i in range(100):
                    step = 10 * i
                    mlflow.log_metrics({'train/loss': loss(step, offset), 'grad_norm': spiky(step)}, step=step)
        with mlflow.start_run(run_name='discarded') as r:
            mlflow.log_metric('train/loss', 9.0, step=0)
        mlflow.delete_run(r.info.run_id)


def write_more():
    import mlflow
    mlflow.set_tracking_uri(f"sqlite:///{os.path.join(out, 'mlflow.db')}")
    run = mlflow.search_runs(experiment_names=['llama'], filter_string="attributes.run_name = 'fp8-mx'",
                             output_format='list')[0]
    client = mlflow.MlflowClient()
    for i in range(100, 110):
        client.log_metric(run.info.run_id, 'train/loss', loss(10 * i, 0.01), step=10 * i)


{'wandb': write_wandb, 'mlflow': write_mlflow, 'more': write_more}[kind]()
