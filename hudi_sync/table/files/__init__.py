"""Data files and file slices: file names, file groups, which files a timeline makes visible,
the listings they come from, the file-system view."""
