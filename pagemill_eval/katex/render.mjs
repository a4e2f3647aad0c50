// Renders LaTeX to MathML with KaTeX, one request per line: stdin gets a JSON string, stdout a JSON object
// {"mathml": "...", "error": null}. Used by pagemill_eval/math_render.py for the olmOCR-bench math rules.
import katex from "katex";
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let reply;
  try {
    const latex = JSON.parse(line);
    const mathml = katex.renderToString(latex, { output: "mathml", displayMode: true, throwOnError: true });
    reply = { mathml, error: null };
  } catch (error) {
    reply = { mathml: "", error: String(error && error.message ? error.message : error) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
