// Renders formulas to HTML with KaTeX for document.html. stdin: a JSON array of [latex, displayMode] pairs;
// stdout: a JSON array of {"html": "...", "error": null | "message"}, in the same order.
// trust stays false (no \href, \url or \htmlClass from a document); errors are returned, never rendered.
import katex from "katex";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const requests = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const replies = requests.map(([latex, displayMode]) => {
  try {
    const html = katex.renderToString(latex, {
      displayMode, output: "htmlAndMathml", throwOnError: true, strict: "ignore", trust: false,
      maxSize: 50, maxExpand: 1000,
    });
    return { html, error: null };
  } catch (error) {
    return { html: "", error: String(error && error.message ? error.message : error) };
  }
});
process.stdout.write(JSON.stringify(replies));
