"""Measuring parse quality: corpus cases, the published metrics (olmOCR-bench rules, text similarity, TEDS), reports."""
