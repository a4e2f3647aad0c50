"""The cpu engine: text layers laid out into Markdown, RapidOCR for scans and images; no GPU, no network."""

from services.worker.engines.cpu.engine import CpuEngine

__all__ = ["CpuEngine"]
