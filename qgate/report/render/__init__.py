"""Views of a report for people and CI: Markdown, HTML with plots, JUnit, comparisons."""
