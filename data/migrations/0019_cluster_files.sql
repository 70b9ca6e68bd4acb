CREATE TABLE `cluster_files` (
	`path` text PRIMARY KEY NOT NULL,
	`sealed` blob NOT NULL,
	`digest` text NOT NULL,
	`updated_at` text NOT NULL
);
