"""DDL analysis: plain views of DDL statements (`specs`), CREATE TABLE / CTAS validation,
PROPERTIES, partition definitions, dynamic and temporary partition rules."""
