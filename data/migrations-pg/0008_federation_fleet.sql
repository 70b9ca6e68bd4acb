ALTER TABLE "cluster_identity" ADD COLUMN "default_name" text;--> statement-breakpoint
ALTER TABLE "federations" ADD COLUMN "status_reason" text;--> statement-breakpoint
ALTER TABLE "federations" ADD COLUMN "declared_as" text;