CREATE TABLE `attribute_schema` (
	`name` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`state` text NOT NULL,
	`authority` text NOT NULL,
	`sensitive` integer NOT NULL,
	`schema_version` text NOT NULL,
	`declared_at` text NOT NULL,
	`deprecated_at` text,
	`withdrawn_at` text,
	`declared_by` text
);
