// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node, CPU) for tst_interop:
//   node ort_run.cjs ORT_MODULE_DIR MODEL.onnx X.f32 ROWS COLS OUT_DIR
// X.f32 holds ROWS x COLS little-endian float32 values, row-major, fed as the input `x`. Every
// output is written to OUT_DIR/<name>.f32 (float32, row-major) and OUT_DIR/outputs.json lists
// each output's name, type and dims.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [ortDir, modelPath, xPath, rowsText, colsText, outDir] = process.argv.slice(2);
  if (!outDir) {
    console.error('usage: node ort_run.cjs ORT_MODULE_DIR MODEL.onnx X.f32 ROWS COLS OUT_DIR');
    process.exit(2);
  }
  const ort = require(path.resolve(ortDir));
  const rows = Number(rowsText);
  const cols = Number(colsText);
  const bytes = fs.readFileSync(xPath);
  if (bytes.length !== rows * cols * 4) {
    throw new Error(`${xPath}: ${bytes.length} bytes, expected ${rows * cols * 4}`);
  }
  const x = new Float32Array(bytes.buffer, bytes.byteOffset, rows * cols);
  const session = await ort.InferenceSession.create(modelPath);
  const results = await session.run({ x: new ort.Tensor('float32', x, [rows, cols]) });
  const listing = [];
  for (const name of session.outputNames) {
    const t = results[name];
    const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    fs.writeFileSync(path.join(outDir, `${name}.f32`), data);
    listing.push({ name, type: t.type, dims: t.dims.map(Number) });
  }
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(listing));
}

main().catch((e) => {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
