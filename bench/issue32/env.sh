# Sourced by the issue-32 GPU scripts, on the GPU machine, from the repo root:
# binaries built here (.gpu-bin, carried), the libraries the GPU machine
# lacks (.gpu-libs), cuDNN from the system or from PyTorch's wheel.
B=$PWD/.gpu-bin
CUDNN=$(python3 -c 'import nvidia.cudnn,os;print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null)/lib
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64:$CUDNN:${LD_LIBRARY_PATH:-}
export CT_SOURCE_DIR=$PWD
export CT_COMMIT=${CT_COMMIT:-$(cat .gpu-bin/COMMIT 2>/dev/null || echo unknown)}
M=/tmp/models
mkdir -p $M
# make NAME VARIANTS: the model files, unless already there
make_model() {
  [ -f $M/$1.qdq-$2.onnx ] && return 0
  timeout 200 python3 scripts/models/make_models.py --out $M --models $1 --variants $2 --calib 2 \
    >> $OUT/make.log 2>&1 || { echo "make_models $1 $2 failed"; tail -5 $OUT/make.log; }
}
