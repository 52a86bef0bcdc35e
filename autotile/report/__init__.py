"""Study reports: self-contained HTML and Markdown with plots, rendered from a finished study."""
