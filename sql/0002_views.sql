-- Read-only views of the feedrouter catalog (run by migration 0002; never edited once released).

-- Why is a subscription not served? One row per invalid or never-matching subscription.
CREATE VIEW feedrouter.subscription_problems AS
SELECT sr.name AS subscriber,
       f.name AS feed,
       s.name AS subscription,
       s.status,
       s.error_code,
       s.error_message,
       s.error_line,
       s.error_column,
       s.query,
       s.updated_at
FROM feedrouter.subscriptions s
JOIN feedrouter.subscribers sr ON sr.id = s.subscriber_id
JOIN feedrouter.feeds f ON f.id = s.feed_id
WHERE s.status IN ('invalid', 'never-matches');

-- Per feed: the current catalog version, the latest plan build, and whether it is up to date.
CREATE VIEW feedrouter.feed_status AS
SELECT f.name AS feed,
       f.active,
       COALESCE(cv.version, 0) AS catalog_version,
       cv.changed_at,
       pb.id AS plan_build_id,
       pb.catalog_version AS built_version,
       pb.built_at,
       pb.artifact_uri,
       pb.subscriptions,
       pb.valid_count,
       pb.invalid_count,
       pb.never_matches_count,
       pb.catalog_version IS NOT DISTINCT FROM COALESCE(cv.version, 0) AS up_to_date
FROM feedrouter.feeds f
LEFT JOIN feedrouter.catalog_versions cv ON cv.feed_name = f.name
LEFT JOIN LATERAL (
    SELECT * FROM feedrouter.plan_builds p WHERE p.feed_id = f.id ORDER BY p.built_at DESC, p.id DESC LIMIT 1
) pb ON true;
