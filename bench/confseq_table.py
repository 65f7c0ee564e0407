#!/usr/bin/env python3
"""The reference values in crates/statistics/src/sequential.rs, from the
`confseq` Python package (Howard, Ramdas et al.'s own implementation of
the normal-mixture boundary), so the Rust boundary can be checked against
it again. Prints (alpha, v_opt, v, bound) rows as the test's constant.

confseq 0.0.11 builds from source only: it needs Debian's libboost-dev,
a pybind11 newer than its pin, and numpy < 2:
  apt-get install -y libboost-dev g++
  python3 -m venv /tmp/cs && /tmp/cs/bin/pip install "setuptools<81" wheel \
      "pybind11>=2.10" cmake scikit-build ninja "numpy<2"
  /tmp/cs/bin/pip install --no-build-isolation confseq==0.0.11
  /tmp/cs/bin/python bench/confseq_table.py
"""
from confseq.boundaries import normal_mixture_bound

for alpha in (0.05, 0.01, 0.005):
    for v_opt in (10.0, 100.0):
        for v in (1.0, 5.0, 10.0, 50.0, 100.0, 1000.0, 1e5):
            # Two-sided, tuned at the same level it is used at.
            b = normal_mixture_bound(v, alpha, v_opt, alpha_opt=alpha, is_one_sided=False)
            print(f"        ({alpha}, {v_opt}, {v}, {format(float(b), '.12g')}),")
